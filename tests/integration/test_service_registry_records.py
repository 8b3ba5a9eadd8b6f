"""The sidecar's writes on a live engine: registry records split into their servers and tools (``"format":
"registry"``), and a stored id with spaces at either end deleted as it is."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from esbridge.config import Settings, load_settings
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.service.app import create_app
from tests.support.hashing import HashingEmbedder

KEY = "registry-records-test-key"
WRITE = {"X-API-Key": KEY}
SERVER = {
    "id": "jira",
    "name": "Jira",
    "description": "Issue tracking.",
    "tools": [
        {"name": "open_issue", "description": "Open a new issue in a project.", "inputSchema": {"type": "object"}},
        {"name": "close_issue", "description": "Close an issue that is done."},
    ],
}


@pytest.fixture
def alias(engine: Engine) -> Iterator[str]:
    name = f"esbridge-test-sidecar-writes-{uuid.uuid4().hex[:10]}"
    yield name
    for info in engine.list_indices(f"{name}*"):
        engine.delete_index(info.name, missing_ok=True)


def _client(engine_kind: str, engine_settings: Settings, alias: str) -> TestClient:
    settings = load_settings(url=str(engine_settings.url), engine=engine_kind, index=alias, service={"api_keys": [KEY]})
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    return TestClient(app, base_url="http://127.0.0.1:8088", raise_server_exceptions=False)


def _documents(engine: Engine, alias: str) -> dict[str, dict[str, Any]]:
    engine.refresh(alias)
    hits = engine.scan(alias, {"term": {"chunk_index": 0}}, ["doc_id", "entity_type", "links"], sort_field="chunk_id")
    return {str(hit.source["doc_id"]): dict(hit.source) for hit in hits}


def test_a_registry_record_is_split_into_tools_and_a_repeat_deletes_the_tools_it_no_longer_lists(
    engine_kind: str, engine: Engine, engine_settings: Settings, alias: str
) -> None:
    with _client(engine_kind, engine_settings, alias) as app:
        body = {"documents": [SERVER], "format": "registry"}
        first = app.post("/v1/documents", json=body, headers=WRITE)
        assert first.status_code == 200, first.text
        assert first.json()["written"] == 1
        stored = _documents(engine, alias)
        assert sorted(stored) == ["jira", "jira/tools/close_issue", "jira/tools/open_issue"]
        assert (stored["jira/tools/open_issue"]["entity_type"], stored["jira/tools/open_issue"]["links"]) == (
            "tool",
            ["jira"],
        )
        found = app.post("/v1/search", json={"query": "close an issue that is done", "group": True}).json()
        assert found["results"][0]["doc_id"] == "jira/tools/close_issue"
        again = app.post(
            "/v1/documents",
            json={"documents": [{**SERVER, "tools": SERVER["tools"][:1]}], "format": "registry"},
            headers=WRITE,
        )
        assert again.json()["written"] == 1, again.text
    assert sorted(_documents(engine, alias)) == ["jira", "jira/tools/open_issue"]


def test_a_stored_id_with_spaces_at_either_end_is_deleted_as_it_is(
    engine_kind: str, engine: Engine, engine_settings: Settings, alias: str
) -> None:
    IndexManager(engine, alias, IndexParameters(dimension=HashingEmbedder.dimension)).create()
    chunks = [
        BulkAction("index", f"{doc_id}#0", {"doc_id": doc_id, "chunk_id": f"{doc_id}#0", "chunk_index": 0, "body": "x"})
        for doc_id in (" padded ", "padded")
    ]
    assert not engine.bulk(alias, chunks).failed
    engine.refresh(alias)
    with _client(engine_kind, engine_settings, alias) as app:
        deleted = app.delete("/v1/documents/%20padded%20", headers=WRITE)
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"id": " padded ", "deleted_chunks": 1, "owned": []}
    assert sorted(_documents(engine, alias)) == ["padded"]
