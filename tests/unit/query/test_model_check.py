"""The check before a search that the query model made the index's vectors, on the embedded engine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge.config.fields import DEFAULT_FIELD_MAP
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.identity import META_KEY, ModelIdentity, identity_of
from esbridge.engines.base import BulkAction, SearchResult
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.errors import AuthorizationError, ModelMismatch
from esbridge.ingest.documents import EMBEDDED
from esbridge.ingest.model_record import mark_reembedding, record_model
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.factory import build_searcher, model_guard
from esbridge.query.model_check import ModelGuard
from esbridge.query.models import SearchRequest
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder, OtherHashingEmbedder


class CountingEngine(AsyncEmbeddedEngine):
    """The embedded engine, counting the searches that reached it."""

    searches = 0

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        self.searches += 1
        return await super().search(index, body)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        self.searches += len(bodies)
        return await super().msearch(index, bodies)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def search(engine: EmbeddedEngine, embedder: HashingEmbedder, *, allow: bool = False) -> tuple[Any, int]:
    counting = CountingEngine(engine=engine)
    searcher = build_searcher(
        counting, "notes", embedder, PipelineSettings(), num_candidates=50, probe=engine, allow_model_mismatch=allow
    )

    async def run() -> Any:
        return await searcher.search(SearchRequest(query="sourdough starter"))

    try:
        return asyncio.run(run()), counting.searches
    except ModelMismatch as exc:
        return exc, counting.searches


def test_an_ingest_records_the_model_and_that_model_searches_without_a_warning(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    assert engine.get_mapping("notes")["_meta"][META_KEY] == identity_of(HashingEmbedder()).to_meta()
    response, _ = search(engine, HashingEmbedder())
    assert response.warnings == []
    assert response.results[0].doc_id == "bread"


def test_another_model_is_refused_naming_both_before_any_engine_query(engine: EmbeddedEngine, tmp_path: Path) -> None:
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    error, searches = search(engine, OtherHashingEmbedder())
    assert isinstance(error, ModelMismatch)
    assert "index notes holds vectors made by hashing-32 (" in str(error)
    assert "embed the query with other-hashing-32 (" in str(error)
    assert searches == 0


def test_a_forced_search_with_another_model_answers_with_a_warning_naming_both(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    response, searches = search(engine, OtherHashingEmbedder(), allow=True)
    assert searches > 0
    assert response.results
    (warning,) = [warning for warning in response.warnings if warning.startswith("model mismatch")]
    assert "made by hashing-32" in warning
    assert "embedded by other-hashing-32" in warning


def unrecorded_index(engine: EmbeddedEngine) -> None:
    """A chunk as esbridge wrote it before model records: its vector is HashingEmbedder's of its embedding
    text (title, then body), and the index records no model."""
    IndexManager(engine, "notes", IndexParameters(dimension=32)).create()
    vector = HashingEmbedder().embed(["Sourdough bread\nstarter"])[0]
    document = {"doc_id": "bread", "chunk_id": "bread#0", "title": "Sourdough bread", "body": "starter"}
    engine.bulk("notes", [BulkAction("index", "bread#0", {**document, "vector": vector, "embedding": EMBEDDED})])
    engine.refresh("notes")
    assert META_KEY not in engine.get_mapping("notes")["_meta"]


def test_an_index_that_records_no_model_is_searched_as_before_by_the_model_its_vectors_agree_with(
    engine: EmbeddedEngine,
) -> None:
    unrecorded_index(engine)
    response, _ = search(engine, HashingEmbedder())
    assert response.warnings == []
    assert [hit.doc_id for hit in response.results] == ["bread"]


def test_an_index_that_records_no_model_is_refused_to_a_model_its_vectors_disagree_with(
    engine: EmbeddedEngine,
) -> None:
    unrecorded_index(engine)
    error, searches = search(engine, OtherHashingEmbedder())
    assert isinstance(error, ModelMismatch)
    assert "index notes records no embedding model, and its vectors were not made by other-hashing-32 (" in str(error)
    assert "stored vectors have cosine" in str(error)
    assert searches == 0
    response, _ = search(engine, OtherHashingEmbedder(), allow=True)
    (warning,) = [warning for warning in response.warnings if warning.startswith("model mismatch")]
    assert "notes records no model and its vectors were not made by other-hashing-32" in warning


def test_no_check_where_no_query_is_embedded_here(engine: EmbeddedEngine) -> None:
    engine_side = DEFAULT_FIELD_MAP.model_copy(update={"query_embedding": "engine"})
    assert model_guard(engine, "notes", HashingEmbedder(), engine_side, allow_mismatch=False) is None
    assert model_guard(engine, "notes", None, DEFAULT_FIELD_MAP, allow_mismatch=False) is None
    assert model_guard(None, "notes", HashingEmbedder(), DEFAULT_FIELD_MAP, allow_mismatch=False) is None


def test_the_record_is_read_again_only_after_its_time_to_live() -> None:
    query = identity_of(HashingEmbedder())
    other = ModelIdentity(name="other", dimension=32, pooling="mean", normalize=True)
    meta: dict[str, Any] = {META_KEY: query.to_meta()}
    now = [0.0]

    async def read(ends: float) -> Mapping[str, Any]:
        return {"_meta": dict(meta)}

    guard = ModelGuard("notes", query, read, ttl_s=30.0, clock=lambda: now[0])
    assert asyncio.run(guard.check()) is None
    meta[META_KEY] = other.to_meta()  # a reindex moved the alias to a version another model made
    now[0] = 29.0
    assert asyncio.run(guard.check()) is None
    now[0] = 30.0
    with pytest.raises(ModelMismatch):
        asyncio.run(guard.check())


def test_a_mapping_that_cannot_be_read_leaves_the_search_unchecked_with_a_warning() -> None:
    async def forbidden(ends: float) -> Mapping[str, Any]:
        raise AuthorizationError("no view_index_metadata", url="http://127.0.0.1:9200", operation="read mapping")

    guard = ModelGuard("notes", identity_of(HashingEmbedder()), forbidden)
    warning = asyncio.run(guard.check())
    assert warning is not None
    assert warning.startswith("the query model was not checked against the index's: its mapping could not be read")
    assert "no view_index_metadata" in warning


def test_an_unfinished_re_embedding_is_searched_with_a_warning(engine: EmbeddedEngine, tmp_path: Path) -> None:
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    mark_reembedding(engine, "notes", identity_of(OtherHashingEmbedder()))  # as a run that then stopped left it
    response, _ = search(engine, HashingEmbedder())
    (warning,) = response.warnings
    assert warning.startswith("index notes was being re-embedded with other-hashing-32 by an ingest that did not")
    assert "run `esbridge ingest` again to finish it" in warning
    record_model(engine, "notes", identity_of(HashingEmbedder()))
    assert search(engine, HashingEmbedder())[0].warnings == [], "recording the model ends it"
