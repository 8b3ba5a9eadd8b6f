"""The sidecar's writes over an alias that points at two indices, as a rollback that added the old version back
without removing the new one leaves it: writes reach only the alias's write index while searches read both."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.identity import ModelIdentity, identity_of
from esbridge.engines import Engine
from esbridge.ingest.model_record import record_model
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.service.app import create_app
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS

KEY = "alias-test-key"


def _alias_over_both_versions(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path, *, new_model: ModelIdentity | None = None
) -> tuple[str, str]:
    """The records in v1, reindexed into v2 (``new_model`` recorded on it, as if re-embedded), and v1 added back
    to the alias; the write index stays v2."""
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension)).reindex()
    old, new = f"{alias}-v1", f"{alias}-v2"
    if new_model is not None:
        record_model(engine, new, new_model)
    engine.update_aliases([{"add": {"index": old, "alias": alias}}])
    return old, new


def test_writes_through_an_alias_over_two_indices_are_refused_naming_them(
    engine_kind: str,
    engine: Engine,
    engine_settings: Settings,
    alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    old, new = _alias_over_both_versions(engine, alias, embedder, tmp_path)
    settings = load_settings(url=str(engine_settings.url), engine=engine_kind, index=alias, service={"api_keys": [KEY]})
    chunks = {index: engine.count(index) for index in (old, new)}

    with TestClient(
        create_app(settings, embedder=embedder, load_model=False),
        base_url="http://127.0.0.1:8088",
        raise_server_exceptions=False,
    ) as app:
        deleted = app.delete("/v1/documents/solar", headers={"X-API-Key": KEY})
        document = {"id": "tides", "title": "Tidal power", "text": "The moon's pull moves oceans past turbines."}
        written = app.post("/v1/documents", json={"documents": [document]}, headers={"X-API-Key": KEY})
        found = app.post("/v1/search", json={"query": "solar electricity"})

    for answer in (deleted, written):
        assert answer.status_code == 409, answer.text
        error = answer.json()["error"]
        assert error["kind"] == "alias_ambiguous"
        assert old in error["message"] and new in error["message"], error["message"]
    engine.refresh(alias)
    assert {index: engine.count(index) for index in (old, new)} == chunks, "nothing was written or deleted"
    assert "solar" in {hit["doc_id"] for hit in found.json()["results"]}, "searches still answer"


def test_a_search_over_two_indices_of_other_models_is_refused_naming_them(
    engine_kind: str,
    engine: Engine,
    engine_settings: Settings,
    alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    # The engine would read both and rank the query's vector against the other model's too.
    update = {"name": "BAAI/bge-small-en-v1.5", "weights": "0" * 64, "pooling": "cls"}
    other = identity_of(embedder).model_copy(update=update)
    _, new = _alias_over_both_versions(engine, alias, embedder, tmp_path, new_model=other)
    settings = load_settings(url=str(engine_settings.url), engine=engine_kind, index=alias)

    with TestClient(
        create_app(settings, embedder=embedder, load_model=False),
        base_url="http://127.0.0.1:8088",
        raise_server_exceptions=False,
    ) as app:
        found = app.post("/v1/search", json={"query": "solar electricity"})

    assert found.status_code == 409, found.text
    error = found.json()["error"]
    assert error["kind"] == "alias_ambiguous"
    assert f"alias {alias!r} points to several indices whose vectors are not of one model" in error["message"]
    assert f"{new}: BAAI/bge-small-en-v1.5" in error["message"], error["message"]
