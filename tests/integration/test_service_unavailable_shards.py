"""The sidecar over an index whose shards have no active copy (red, or behind an alias beside a healthy one):
a passing state of the cluster, answered 503 with Retry-After, and readiness names the index, not the engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.service.app import create_app
from tests.integration.engines import load_records
from tests.integration.test_partial_shards import create_stranded_index
from tests.integration.test_search import RECORDS

KEY = "shards-test-key"


@pytest.fixture
def client(engine_kind: str, engine_settings: Settings, alias: str, embedder: CachedEmbedder) -> Iterator[TestClient]:
    settings = load_settings(
        url=str(engine_settings.url), engine=engine_kind, index=alias, service={"api_keys": [KEY], "retry_after_s": 7}
    )
    with TestClient(
        create_app(settings, embedder=embedder, load_model=False),
        base_url="http://127.0.0.1:8088",
        raise_server_exceptions=False,
    ) as app:
        yield app


def _assert_unavailable(answer: Any, index: str) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "7"
    error = answer.json()["error"]
    assert error["kind"] == "index_unavailable"
    assert f"index {index!r}" in error["message"]


def test_a_red_index_is_503_and_not_ready_naming_the_index(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, client: TestClient
) -> None:
    stranded = f"{alias}-red"
    create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
    engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])

    _assert_unavailable(client.post("/v1/search", json={"query": "solar electricity"}), alias)
    _assert_unavailable(client.delete("/v1/documents/solar", headers={"X-API-Key": KEY}), alias)
    ready = client.get("/readyz")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["engine"] == "ok"
    assert "the index is red" in checks["index"]


def test_a_write_that_cannot_read_every_shard_is_503(
    engine: Engine,
    engine_settings: Settings,
    alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
    client: TestClient,
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    stranded = f"{alias}-stranded"
    create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
    engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])

    _assert_unavailable(client.delete("/v1/documents/solar", headers={"X-API-Key": KEY}), alias)
    assert client.post("/v1/search", json={"query": "solar electricity"}).json()["partial"] is True
