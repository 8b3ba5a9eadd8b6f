"""Document ids at the edges of what the write routes take, on the embedded engine: ids whose chunk ids outgrow
what engines accept, and ids holding characters a URL path carries only escaped."""

from __future__ import annotations

from fastapi.testclient import TestClient

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
