"""One entity type holding 90% of the records must not crowd the others out of the top 10: kNN per type
(``pipeline.knn_per_type``) brings each type's candidates, soft caps (``shaping.cap_types``) give them slots."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from esbridge.config.pipeline import PipelineSettings, ShapingSettings
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.hashing import HashingEmbedder

TYPES = ("mcp_server", "a2a_agent", "skill")


def records() -> list[dict[str, Any]]:
    """270 tools (90%), 60 of them exactly about the query; 10 records of each other type, one of them about
    the query in more words (so both retrievers rank all 60 tools above it)."""
    made: list[dict[str, Any]] = []
    for n in range(270):
        topic = "weather forecast" if n < 60 else f"invoice billing payment {n}"
        made.append({"id": f"tool-{n}", "title": f"tool {n}", "text": topic, "entity_type": "tool"})
    for kind in TYPES:
        for n in range(10):
            topic = "weather forecast for travellers" if n == 0 else f"calendar meetings schedule {n}"
            made.append({"id": f"{kind}-{n}", "title": f"{kind} {n}", "text": topic, "entity_type": kind})
    return made


def top_types(tmp_path: Path, pipeline: PipelineSettings) -> list[str]:
    response = searched(tmp_path, pipeline, SearchRequest(query="weather forecast", top_n=10))
    return [hit.doc_id for hit in response.results]


def searched(tmp_path: Path, pipeline: PipelineSettings, request: SearchRequest) -> SearchResponse:
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records()), encoding="utf-8")
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="t"))
    try:
        hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", embedder, pipeline)
        return asyncio.run(hybrid.search(request))
    finally:
        engine.close()


def test_without_per_type_knn_and_caps_the_big_type_takes_the_top_10(tmp_path: Path) -> None:
    top = top_types(tmp_path, PipelineSettings())
    assert all(doc.startswith("tool-") for doc in top)  # what the two settings below are for


def test_every_type_with_a_relevant_record_is_in_the_top_10(tmp_path: Path) -> None:
    pipeline = PipelineSettings(
        knn_per_type=["tool", *TYPES], knn_k_per_type=30, shaping=ShapingSettings(cap_types=True)
    )
    top = top_types(tmp_path, pipeline)
    assert {f"{kind}-0" for kind in TYPES} <= set(top)
    assert sum(doc.startswith("tool-") for doc in top) >= 6  # the big type still leads: ceil(0.6 x 10) at least


def test_types_left_out_of_knn_per_type_keep_their_knn_candidates(tmp_path: Path) -> None:
    """Listing only the minority types must not take kNN away from the others (nor from untyped records)."""
    pipeline = PipelineSettings(knn_per_type=["skill"], knn_k_per_type=30, shaping=ShapingSettings(cap_types=True))
    response = searched(tmp_path, pipeline, SearchRequest(query="weather forecast", top_n=10, explain=True))
    by_knn = {hit.doc_id for hit in response.results if hit.explain is not None and "knn" in hit.explain.retrievers}
    assert "skill-0" in by_knn
    assert any(doc.startswith("tool-") for doc in by_knn)  # the big type, not listed, is still found by kNN


def test_knn_per_type_sends_one_request_per_type_the_filters_allow_and_one_for_the_rest() -> None:
    from esbridge.query.models import Filters
    from esbridge.query.retrievers import RetrievalContext, knn

    def context(filters: Filters) -> RetrievalContext:
        return RetrievalContext("opensearch", "q", 20, filters, 100, knn_types=("tool", "skill"), k_per_type=30)

    def described(body: dict[str, Any]) -> tuple[list[str], list[str], int]:
        """(entity types required, entity types excluded, k) of one OpenSearch kNN body."""
        (clause,) = body["query"]["knn"].values()
        query = clause["filter"]["bool"]
        required = [kind for c in query["filter"] if "terms" in c for kind in c["terms"].get("entity_type", [])]
        excluded = [kind for c in query.get("must_not", []) for kind in c["terms"].get("entity_type", [])]
        return required, excluded, clause["k"]

    split = knn.bodies(context(Filters()), [0.1, 0.2])
    # the unlisted types (and untyped records) keep a request of the usual depth
    assert [described(body) for body in split] == [(["tool"], [], 30), (["skill"], [], 30), ([], ["tool", "skill"], 20)]
    some = knn.bodies(context(Filters(terms={"entity_type": ["skill", "agent"]})), [0.1, 0.2])
    assert [described(body) for body in some] == [(["skill"], [], 30), (["agent"], [], 20)]
    listed = knn.bodies(context(Filters(terms={"entity_type": ["skill", "tool"]})), [0.1, 0.2])
    assert [described(body) for body in listed] == [(["tool"], [], 30), (["skill"], [], 30)]
    # no configured type passes the request's filter: one plain request, with the request's filter
    plain = knn.bodies(context(Filters(terms={"entity_type": ["agent"]})), [0.1, 0.2])
    assert [described(body) for body in plain] == [(["agent"], [], 20)]
