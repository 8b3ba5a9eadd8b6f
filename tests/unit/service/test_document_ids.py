"""Document ids at the edges of what the write routes take, on the embedded engine: ids whose chunk ids outgrow
what engines accept, and ids holding characters a URL path carries only escaped."""

from __future__ import annotations

from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from tests.unit.service.conftest import KEY, ClientFactory

WRITE = {"X-API-Key": KEY}


def stored_chunks(doc_id: str) -> dict[str, str]:
    """The chunks of ``doc_id`` in the index ``notes``: chunk id -> body."""
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        hits = engine.scan("notes", {"terms": {"doc_id": [doc_id]}}, ["body"], sort_field="chunk_id")
        return {hit.id: hit.source["body"] for hit in hits}
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


def test_a_document_whose_id_holds_a_line_break_can_be_deleted(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "two\nlines", "text": "x"}]}, headers=WRITE)
    assert written.json()["results"][0]["status"] == "ok"
    client.post("/v1/documents", json={"documents": [{"id": "two", "text": "y"}]}, headers=WRITE)
    deleted = client.delete("/v1/documents/two%0Alines", headers=WRITE)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": "two\nlines", "deleted_chunks": 1}
    assert stored_chunks("two") == {"two#0": "y"}


def test_a_delete_trims_the_id_as_the_upsert_did(make_client: ClientFactory) -> None:
    """An upsert of ' pad ' answers that it wrote 'pad'; a delete of ' pad ' (or 'pad\n') finds that document."""
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": " pad ", "text": "x"}]}, headers=WRITE)
    assert written.json()["results"][0]["id"] == "pad"
    deleted = client.delete("/v1/documents/%20pad%20", headers=WRITE)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": "pad", "deleted_chunks": 1}
    assert stored_chunks("pad") == {}
    client.post("/v1/documents", json={"documents": [{"id": "two", "text": "y"}]}, headers=WRITE)
    assert client.delete("/v1/documents/two%0A", headers=WRITE).json() == {"id": "two", "deleted_chunks": 1}
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
    assert deleted.json() == {"id": "caf\ufffd", "deleted_chunks": 1}
