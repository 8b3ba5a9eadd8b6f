"""Quantized vectors on the live engines: the mapping takes them, search answers, `mapping diff` names a change
of encoding and `index reindex` applies it."""

from __future__ import annotations

from pathlib import Path

from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.vector_options import encoding_of, encodings
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import VECTOR_FIELD, IndexParameters
from esbridge.query.models import SearchRequest
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS, search


def test_every_encoding_of_the_engine_is_applied_by_reindex_and_searches(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    offered = encodings(engine.dialect, engine.probe().version)
    assert "int8" in offered
    for encoding in offered[1:]:
        manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension, vector_encoding=encoding))
        changes = manager.diff().needs_new_version
        assert any(change.path.startswith(f"mappings.properties.{VECTOR_FIELD}") for change in changes), changes
        outcome = manager.reindex(delete_old=True)
        assert encoding_of(engine.get_mapping(outcome.new)["properties"][VECTOR_FIELD]) == encoding
        assert manager.diff().needs_new_version == []
        response = search(engine_settings, alias, embedder, SearchRequest(query="sunlight into electricity"))
        assert response.search_mode == "hybrid" and not response.warnings, (encoding, response.warnings)
        assert response.results[0].doc_id == "solar", encoding
