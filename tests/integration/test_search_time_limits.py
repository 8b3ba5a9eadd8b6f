"""The time left that each search request carries (``bodies.with_timeout``) on live engines: the bodies the stages
send alone (the retrievers, the graph stage's link reads, grouping's read by id) are accepted with it, kNN on
Elasticsearch too (which refuses ``timeout`` inside its ``knn`` section, not at the top), and a search whose time
runs out is answered ``timed_out`` with what was found, not with an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.engines.dialect import index_settings
from esbridge.query.bodies import bm25_body, knn_body, links_body
from esbridge.query.deadline import with_timeout
from esbridge.query.models import Filters
from tests.integration.engines import load_records
from tests.integration.test_query_bodies import RECORDS


def found(engine: Engine, index: str, body: dict[str, Any]) -> list[str]:
    result = engine.search(index, body)
    assert not result.partial, result.partial
    return [hit.id for hit in result.hits]


def test_the_bodies_sent_alone_are_accepted_with_the_time_left(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    loaded = load_records(engine, alias, embedder, tmp_path, RECORDS)
    vector = embedder.embed(["renewable electricity"])[0]
    stages = {
        "bm25": bm25_body(engine.dialect, "energy", size=10, filters=Filters()),
        "knn": knn_body(engine.dialect, vector, k=5, filters=Filters(), num_candidates=20),
        "links": links_body(["solar"], size=50, filters=Filters()),
        "by id": {"size": 2, "_source": ["doc_id"], "query": {"ids": {"values": ["solar#0", "wind#0"]}}},
    }
    for stage, body in stages.items():
        timed = with_timeout(body, 5.0)
        assert timed["timeout"] == "5000ms"
        assert found(engine, loaded, timed) == found(engine, loaded, body), stage


def slow(dialect: str, query: dict[str, Any]) -> dict[str, Any]:
    """``query`` made to take a second or more over a few thousand documents, its time spent scoring them. The
    Elasticsearch test build has no scripting, so there 3,000 filtered functions do it."""
    if dialect == "opensearch":
        loop = "double s = 0; for (int i = 0; i < 20000; i++) { s += Math.sqrt(i); } return s;"
        return {"script_score": {"query": query, "script": {"source": loop}}}
    functions = [{"filter": {"match": {"body": f"note {n}"}}, "weight": 1} for n in range(3000)]
    return {"function_score": {"query": query, "functions": functions, "score_mode": "sum"}}


def test_a_search_whose_time_runs_out_answers_timed_out_not_an_error(engine: Engine, index_name: str) -> None:
    engine.create_index(
        index_name,
        {"settings": index_settings(engine.dialect), "mappings": {"properties": {"body": {"type": "text"}}}},
    )
    notes = [BulkAction("index", f"n{n}", {"body": f"a note on solar energy, note {n}"}) for n in range(3000)]
    assert list(engine.bulk(index_name, notes).failed) == []
    engine.refresh(index_name)
    body = bm25_body(engine.dialect, "solar energy", size=10, filters=Filters())
    everything = engine.search(index_name, body)
    assert not everything.timed_out and len(everything.hits) == 10
    result = engine.search(index_name, with_timeout({**body, "query": slow(engine.dialect, body["query"])}, 0.0001))
    assert result.timed_out
    assert result.partial and "time limit cut the search short" in result.partial
    assert result.took_ms < 30_000
