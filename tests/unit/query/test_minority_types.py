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
from esbridge.query.models import SearchRequest
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
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records()), encoding="utf-8")
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="t"))
    try:
        hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", embedder, pipeline)
        response = asyncio.run(hybrid.search(SearchRequest(query="weather forecast", top_n=10)))
    finally:
        engine.close()
    return [hit.doc_id for hit in response.results]


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


def test_knn_per_type_sends_one_request_per_type_the_filters_allow() -> None:
    from esbridge.query.models import Filters
    from esbridge.query.retrievers import RetrievalContext, knn

    def context(filters: Filters) -> RetrievalContext:
        return RetrievalContext("opensearch", "q", 20, filters, 100, knn_types=("tool", "skill"), k_per_type=30)

    def types(body: dict[str, Any]) -> list[Any]:
        clauses = json.dumps(body)
        return [kind for kind in ("tool", "skill", "agent") if f'"entity_type": ["{kind}"]' in clauses]

    split = knn.bodies(context(Filters()), [0.1, 0.2])
    assert [types(body) for body in split] == [["tool"], ["skill"]]
    assert all(json.dumps(body).count('"k": 30') == 1 for body in split)
    only_skills = knn.bodies(context(Filters(terms={"entity_type": ["skill", "agent"]})), [0.1, 0.2])
    assert [types(body) for body in only_skills] == [["skill"]]
    # no configured type passes the request's filter: one plain request, with the request's filter
    plain = knn.bodies(context(Filters(terms={"entity_type": ["agent"]})), [0.1, 0.2])
    assert [types(body) for body in plain] == [["agent"]]
