"""The native hybrid request carries the time left (``deadline.with_timeout``) like every other search request, on
the live engines: the envelope it travels in (OpenSearch's inline ``search_pipeline``, Elasticsearch's ``retriever``)
is accepted with a top-level ``timeout`` beside it, and a search whose time runs out is answered ``timed_out`` with
what was found, not with an error. Where the engine fuses natively (OpenSearch with neural-search, Elasticsearch
with the rrf and linear retrievers' licence and module), the fused request itself is checked the same way."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.engines.dialect import index_settings, vector_field
from esbridge.query.deadline import with_timeout
from esbridge.query.native import elasticsearch, opensearch
from esbridge.query.native.fusion import native_fusion
from tests.integration.test_native_hybrid import capabilities_of, natively_fusing
from tests.integration.test_search_time_limits import slow

NOTES = 3000
VECTOR = [1.0, 0.0, 0.0]


def notes(engine: Engine, index: str, *, vectors: bool = False) -> None:
    """``NOTES`` short notes on solar energy; with ``vectors``, each with a 3-dimensional vector ``v``."""
    settings = index_settings(engine.dialect)
    properties: dict[str, Any] = {"body": {"type": "text"}}
    if vectors:  # (OpenSearch's settings turn k-NN on already)
        properties["v"] = vector_field(engine.dialect, 3)
    engine.create_index(index, {"settings": settings, "mappings": {"properties": properties}})
    for start in range(0, NOTES, 500):  # in parts: one request of all of them can outlast the client's timeout
        actions = [
            BulkAction("index", f"n{n}", {"body": f"a note on solar energy, note {n}"} | _vector(n, vectors))
            for n in range(start, start + 500)
        ]
        assert list(engine.bulk(index, actions).failed) == []
    engine.refresh(index)


def _vector(n: int, vectors: bool) -> dict[str, Any]:
    return {"v": [1.0, n / NOTES, 0.5]} if vectors else {}


def answered_in_time(engine: Engine, index: str, fast: dict[str, Any], cut: dict[str, Any]) -> None:
    """``fast`` is answered whole with the time left beside it; ``cut`` (a slow query) with a tiny one is answered
    ``timed_out`` with what was found, not refused."""
    whole = engine.search(index, with_timeout(fast, 5.0))
    assert not whole.partial and len(whole.hits) == 10, whole.partial
    assert [hit.id for hit in whole.hits] == [hit.id for hit in engine.search(index, fast).hits]
    # Not less: a limit out before OpenSearch has prepared the query is answered HTTP 500 (EngineTimeout) instead.
    result = engine.search(index, with_timeout(cut, 0.05))
    assert result.timed_out
    assert result.partial and "time limit cut the search short" in result.partial
    assert result.took_ms < 30_000


def envelope(dialect: str, query: dict[str, Any]) -> dict[str, Any]:
    """``query`` in the envelope of the native request on every node: an inline search pipeline (with a processor of
    OpenSearch's own search-pipeline-common module), or Elasticsearch's standard retriever (no licence needed)."""
    if dialect == "opensearch":
        kept = {"filter_query": {"query": {"match": {"body": "solar"}}}}
        return {"size": 10, "query": query, "search_pipeline": {"request_processors": [kept]}}
    return {"size": 10, "retriever": {"standard": {"query": query}}}


def test_the_native_request_s_envelope_is_accepted_with_the_time_left(engine: Engine, index_name: str) -> None:
    notes(engine, index_name)
    query = {"match": {"body": "solar energy"}}
    answered_in_time(
        engine, index_name, envelope(engine.dialect, query), envelope(engine.dialect, slow(engine.dialect, query))
    )


@pytest.mark.parametrize("method", ["rrf", "linear"])
def test_the_fused_request_is_accepted_with_the_time_left(
    engine_kind: str, engine: Engine, index_name: str, method: str
) -> None:
    capabilities = capabilities_of(engine_kind)
    if not natively_fusing(engine_kind):
        notes_ = "; ".join(n for n in capabilities.notes if "hybrid" in n or "retriever" in n or "licence" in n)
        pytest.skip(f"this {engine_kind} does not fuse natively ({notes_ or 'no native hybrid feature'})")
    fusion = native_fusion(method, {}, {"normalization": "min_max"} if method == "linear" else {}, ["bm25", "knn"])
    features = capabilities.native_hybrid
    notes(engine, index_name, vectors=True)
    query = {"match": {"body": "solar energy"}}

    def fused(lexical: dict[str, Any]) -> dict[str, Any]:
        if engine.dialect == "opensearch":
            knn: dict[str, Any] = {"query": {"knn": {"v": {"vector": VECTOR, "k": 10}}}}
            pipeline = opensearch.search_pipeline(fusion, features)
            return opensearch.hybrid_body(
                {"query": lexical}, knn, size=10, pipeline=pipeline, features=features, source_fields=[]
            )
        knn = {"knn": {"field": "v", "query_vector": VECTOR, "k": 10, "num_candidates": 50}}
        return elasticsearch.retriever_body(fusion, {"query": lexical}, knn, size=10, source_fields=[])

    answered_in_time(engine, index_name, fused(query), fused(slow(engine.dialect, query)))
