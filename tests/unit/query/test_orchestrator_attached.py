"""The search pipeline on an attached index: stored fields under its own names, features off by the field map."""

from __future__ import annotations

import asyncio
from typing import Any

from esbridge.config.fields import FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.memory_engine import NOW, MemoryEngine, StubEmbedder

CATALOGUE = FieldMap(
    text={"name": 2.0, "body": 1.0}, content=["body"], vector="embedding", dimension=3, title="name", date="updated"
)
SOURCES: dict[str, dict[str, Any]] = {
    "p1": {"name": "Solar kit", "body": "Panels.", "updated": "2026-11-20T00:00:00Z"},
    "p2": {"name": "Wind turbine", "body": "Blades.", "updated": "2025-01-01T00:00:00Z"},
}


def run(fields: FieldMap, request: SearchRequest, engine: MemoryEngine | None = None) -> SearchResponse:
    engine = engine or MemoryEngine(bm25=[("p1", 3.0), ("p2", 1.0)], knn=[("p2", 0.9), ("p1", 0.8)], sources=SOURCES)
    searcher = HybridSearcher(
        engine, "products", StubEmbedder(), PipelineSettings(fusion="rrf"), clock=lambda: NOW, fields=fields
    )
    return asyncio.run(searcher.search(request))


def test_results_read_the_mapped_title_and_id_and_recency_reads_the_mapped_date() -> None:
    response = run(CATALOGUE, SearchRequest(query="solar", explain=True, recency=True))
    assert response.search_mode == "hybrid"
    by_id = {hit.id: hit for hit in response.results}
    assert (by_id["p1"].doc_id, by_id["p1"].title) == ("p1", "Solar kit")
    assert by_id["p1"].explain is not None and by_id["p1"].explain.recency_multiplier == 1.2  # 1 day old
    assert by_id["p2"].explain is not None and by_id["p2"].explain.recency_multiplier == 1.0
    assert by_id["p1"].explain.retrievers["bm25"].fields == ["name^2", "body"]
    assert by_id["p1"].explain.retrievers["knn"].fields == ["embedding"]
    assert set(response.details.off) == {"graph", "lifecycle"}
    assert response.warnings == []


def test_without_a_vector_field_the_search_is_lexical_and_says_why() -> None:
    lexical = CATALOGUE.model_copy(update={"vector": None, "dimension": None})
    response = run(lexical, SearchRequest(query="solar", graph=True))
    assert response.search_mode == "lexical-only"
    assert [hit.id for hit in response.results] == ["p1", "p2"]
    assert response.details.off["knn"] == "no vector field is mapped"
    assert response.warnings == ["graph is off: no links field is mapped"]
