"""Document ids at the edges of what the write routes take, on the embedded engine: ids whose chunk ids outgrow
what engines accept, and ids holding characters a URL path carries only escaped."""

from __future__ import annotations

import pytest

from esbridge.config import load_settings
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ids import refused_character, shown_escaped
from tests.unit.service.conftest import KEY, ClientFactory

WRITE = {"X-API-Key": KEY}
# Ids an upsert refuses, and their paths.
REFUSED = [
    ("nul\x00id", "nul%00id"),
    ("two\nlines", "two%0Alines"),
    ("esc\x1b[2J", "esc%1B%5B2J"),
    ("c1\u009bx", "c1%C2%9Bx"),
    ("invoice\u202egpj.exe", "invoice%E2%80%AEgpj.exe"),
]


def stored_chunks(doc_id: str) -> dict[str, str]:
    """The chunks of ``doc_id`` in the index ``notes``: chunk id -> body."""
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        hits = engine.scan("notes", {"terms": {"doc_id": [doc_id]}}, ["body"], sort_field="chunk_id")
        return {hit.id: hit.source["body"] for hit in hits}
    finally:
        engine.close()


def store_directly(doc_id: str, body: str) -> None:
    """One chunk of ``doc_id`` written by the engine itself, as ``esbridge import`` or an older version left it."""
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        chunk = {"doc_id": doc_id, "chunk_id": f"{doc_id}#0", "chunk_index": 0, "title": "old", "body": body}
        written = engine.bulk("notes", [BulkAction("index", f"{doc_id}#0", chunk)])
        assert not written.failed, written.failed
        engine.refresh("notes")
    finally:
        engine.close()


def test_a_document_whose_later_chunk_ids_are_too_long_is_refused_whole_and_its_old_version_stays(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    doc_id = "p" * 510  # chunks #0 to #9 have 512-byte ids, which engines take; #10 on have 513
    old = client.post("/v1/documents", json={"documents": [{"id": doc_id, "text": "kestrel"}]}, headers=WRITE)
    assert old.json()["results"][0]["status"] == "ok"
    text = " ".join(f"paragraph {n} about herons wading in the shallows." for n in range(400))
    documents = [{"id": doc_id, "text": text}, {"id": "other", "text": "herons elsewhere"}]
    answer = client.post("/v1/documents", json={"documents": documents}, headers=WRITE)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["written"], body["failed"]) == (1, 1)
    refused, other = body["results"]
    assert (refused["status"], refused["chunks"]) == ("error", 0)
    assert f"chunk {doc_id}#10: id is 513 bytes long" in refused["error"]
    assert "none of its" in refused["error"]
    assert other["status"] == "ok"
    # Nothing of the refused version was written: the old version is whole, as it was.
    assert stored_chunks(doc_id) == {f"{doc_id}#0": "kestrel"}


@pytest.mark.parametrize(
    ("doc_id", "path", "named"),
    [
        (*REFUSED[0], "the control character U+0000 at position 3"),
        (*REFUSED[1], "the control character U+000A at position 3"),
        (*REFUSED[2], "the control character U+001B at position 3"),
        (*REFUSED[3], "the control character U+009B at position 2"),
        (*REFUSED[4], "the bidirectional formatting character U+202E"),
    ],
)
def test_an_id_with_a_control_or_bidi_character_is_refused_naming_its_position_and_never_echoed(
    make_client: ClientFactory, doc_id: str, path: str, named: str
) -> None:
    client = make_client(api_keys=[KEY])
    documents = [{"id": "fine", "text": "kept"}, {"id": doc_id, "text": "refused"}]
    answer = client.post("/v1/documents", json={"documents": documents}, headers=WRITE)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["written"], body["failed"]) == (1, 1)
    refused = body["results"][1]
    assert (refused["position"], refused["id"], refused["status"]) == (1, None, "error")
    assert refused["error"].startswith(f"field 'id': holds {named}")
    assert doc_id not in answer.text and doc_id[-4:] not in answer.content.decode()  # neither whole nor its tail
    assert stored_chunks(doc_id) == {}
    deleted = client.delete(f"/v1/documents/{path}", headers=WRITE)
    assert deleted.status_code == 404, deleted.text  # as any unknown id: deletes take ids upserts refuse
    assert deleted.json()["error"]["message"] == f"no document '{shown_escaped(doc_id)}' in notes"
    assert not any(refused_character(char) for char in deleted.content.decode())


@pytest.mark.parametrize(("doc_id", "path"), REFUSED)
def test_a_stored_document_whose_id_is_now_refused_is_deleted_and_its_id_echoed_escaped(
    make_client: ClientFactory, doc_id: str, path: str
) -> None:
    """Written by the engine directly, as an older version or ``esbridge import`` left it: its id is refused for
    new documents, yet the delete removes it, and only it."""
    client = make_client(api_keys=[KEY])
    prefix = doc_id[:2]  # a document whose id is where the odd one's starts stays
    client.post("/v1/documents", json={"documents": [{"id": prefix, "text": "kept"}]}, headers=WRITE)
    store_directly(doc_id, "stored")
    assert stored_chunks(doc_id) == {f"{doc_id}#0": "stored"}
    deleted = client.delete(f"/v1/documents/{path}", headers=WRITE)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": shown_escaped(doc_id), "deleted_chunks": 1, "owned": []}
    assert not any(refused_character(char) for char in deleted.content.decode())
    assert stored_chunks(doc_id) == {}
    assert stored_chunks(prefix) == {f"{prefix}#0": "kept"}


def test_a_delete_trims_the_id_as_the_upsert_did(make_client: ClientFactory) -> None:
    """An upsert of ' pad ' answers that it wrote 'pad'; a delete of ' pad ' (or 'pad\n') finds that document."""
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": " pad ", "text": "x"}]}, headers=WRITE)
    assert written.json()["results"][0]["id"] == "pad"
    deleted = client.delete("/v1/documents/%20pad%20", headers=WRITE)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": "pad", "deleted_chunks": 1, "owned": []}
    assert stored_chunks("pad") == {}
    client.post("/v1/documents", json={"documents": [{"id": "two", "text": "y"}]}, headers=WRITE)
    assert client.delete("/v1/documents/two%0A", headers=WRITE).json() == {
        "id": "two",
        "deleted_chunks": 1,
        "owned": [],
    }
    blank = client.delete("/v1/documents/%20%09", headers=WRITE)
    assert blank.status_code == 422, blank.text
    assert blank.json()["error"]["fields"] == [{"field": "path.doc_id", "message": "must not be empty"}]


def test_a_delete_whose_id_is_not_utf8_is_refused_naming_the_byte(make_client: ClientFactory) -> None:
    """'%ff' is no UTF-8: refused, as a body that is not UTF-8 is, not looked up as U+FFFD; a real U+FFFD is kept."""
    client = make_client(api_keys=[KEY])
    client.post("/v1/documents", json={"documents": [{"id": "caf\ufffd", "text": "x"}]}, headers=WRITE)
    refused = client.delete("/v1/documents/caf%ff", headers=WRITE)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["kind"] == "validation"
    assert error["fields"][0]["field"] == "path.doc_id"
    assert "is not UTF-8 (byte 0xff at byte 3 of the id)" in error["message"]
    assert stored_chunks("caf\ufffd") == {"caf\ufffd#0": "x"}
    deleted = client.delete("/v1/documents/caf%EF%BF%BD", headers=WRITE)
    assert deleted.json() == {"id": "caf\ufffd", "deleted_chunks": 1, "owned": []}


@pytest.mark.parametrize(
    ("doc_id", "path"), [(" spaced ", "%20spaced%20"), ("\u00a0tab\t", "%C2%A0tab%09"), ("  two", "%20%20two")]
)
def test_a_stored_id_with_spaces_at_either_end_is_deleted_as_it_is_and_only_then_the_trimmed_one(
    make_client: ClientFactory, doc_id: str, path: str
) -> None:
    """The path's id as given is looked up first; the trimmed one, which an upsert of it stores, after."""
    client = make_client(api_keys=[KEY])
    trimmed = doc_id.strip()
    upserted = client.post("/v1/documents", json={"documents": [{"id": doc_id, "text": "x"}]}, headers=WRITE)
    assert upserted.json()["results"][0]["id"] == trimmed  # new ids are still stored trimmed
    store_directly(doc_id, "stored as it is")
    assert stored_chunks(doc_id) == {f"{doc_id}#0": "stored as it is"}
    deleted = client.delete(f"/v1/documents/{path}", headers=WRITE)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": shown_escaped(doc_id), "deleted_chunks": 1, "owned": []}
    assert stored_chunks(doc_id) == {}
    assert stored_chunks(trimmed) == {f"{trimmed}#0": "x"}  # only the id as given was deleted
    again = client.delete(f"/v1/documents/{path}", headers=WRITE)
    assert again.json() == {"id": trimmed, "deleted_chunks": 1, "owned": []}
    assert stored_chunks(trimmed) == {}
    gone = client.delete(f"/v1/documents/{path}", headers=WRITE)
    assert gone.status_code == 404, gone.text
    assert gone.json()["error"]["message"] == f"no document '{trimmed}' in notes"
