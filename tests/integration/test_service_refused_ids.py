"""The sidecar's delete of documents a live engine holds under ids an upsert now refuses (control and bidi
characters), as an older version or ``esbridge import`` left them: each is removed, and only it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from esbridge.config import Settings, load_settings
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.ids import refused_character, shown_escaped
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.service.app import create_app
from tests.support.hashing import HashingEmbedder

KEY = "refused-ids-test-key"
ODD = {"nul\x00id": "nul%00id", "two\nlines": "two%0Alines", "invoice\u202egpj.exe": "invoice%E2%80%AEgpj.exe"}


def _chunk(doc_id: str) -> BulkAction:
    source = {"doc_id": doc_id, "chunk_id": f"{doc_id}#0", "chunk_index": 0, "title": "old", "body": "stored"}
    return BulkAction("index", f"{doc_id}#0", source)


def test_documents_under_refused_ids_are_deleted_through_the_sidecar(
    engine_kind: str, engine: Engine, engine_settings: Settings, alias: str
) -> None:
    IndexManager(engine, alias, IndexParameters(dimension=HashingEmbedder.dimension)).create()
    kept = ["nul", "two", "invoice"]  # ids where the odd ones begin
    written = engine.bulk(alias, [*(_chunk(doc_id) for doc_id in ODD), *(_chunk(doc_id) for doc_id in kept)])
    assert not written.failed, written.failed
    engine.refresh(alias)
    settings = load_settings(url=str(engine_settings.url), engine=engine_kind, index=alias, service={"api_keys": [KEY]})
    with TestClient(
        create_app(settings, embedder=HashingEmbedder(), load_model=False),
        base_url="http://127.0.0.1:8088",
        raise_server_exceptions=False,
    ) as app:
        for doc_id, path in ODD.items():
            deleted = app.delete(f"/v1/documents/{path}", headers={"X-API-Key": KEY})
            assert deleted.status_code == 200, deleted.text
            assert deleted.json() == {"id": shown_escaped(doc_id), "deleted_chunks": 1, "owned": []}
            assert not any(refused_character(char) for char in deleted.content.decode())
            again = app.delete(f"/v1/documents/{path}", headers={"X-API-Key": KEY})
            assert again.status_code == 404, again.text
    engine.refresh(alias)
    left = {hit.source["doc_id"] for hit in engine.scan(alias, {"match_all": {}}, ["doc_id"], sort_field="chunk_id")}
    assert left == set(kept)
