"""Running configurations over the in-memory engine of the orchestrator tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import SearchResult
from esbridge.evaluation.methods import configuration
from esbridge.evaluation.runner import Depth, MemoEngine, doc_run, run_configurations
from esbridge.query.models import SearchHit, SearchResponse
from tests.support.memory_engine import MemoryEngine, StubEmbedder

# Chunks of documents a, b, c, d; b has two chunks.
LEX = [("a#0", 9.0), ("b#1", 8.0), ("b#0", 7.0), ("c#0", 3.0)]
SEM = [("d#0", 0.9), ("b#0", 0.8), ("a#0", 0.5)]


class CountingEngine(MemoryEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies = 0

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        self.bodies += 1
        return await super().search(index, body)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        answers: list[SearchResult | Exception] = []
        for body in bodies:  # each counted once, by search
            try:
                answers.append(await self.search(index, body))
            except errors.EngineError as exc:
                answers.append(exc)
        return answers


def run(engine: MemoryEngine, names: str, queries: Mapping[str, str], **kwargs: Any) -> list[Any]:
    chosen = [configuration(name.strip()) for name in names.split(",")]
    return asyncio.run(run_configurations(engine, "idx", StubEmbedder(), chosen, queries, **kwargs))


def test_rankings_are_per_document_and_retrieval_is_shared() -> None:
    engine = CountingEngine(LEX, SEM)
    bm25, knn, rrf = run(engine, "bm25,knn,rrf", {"q1": "solar", "q2": "wind"}, depth=Depth(top_n=3, deep=False))
    assert list(bm25.top["q1"]) == ["a", "b", "c"]
    assert list(knn.top["q1"]) == ["d", "b", "a"]
    # RRF(60): a#0 = 1/61 + 1/63 = 0.03227, b#0 = 1/63 + 1/62 = 0.03200, d#0 = 1/61, b#1 = 1/62 (collapsed into b).
    assert list(rrf.top["q1"]) == ["a", "b", "d"]
    assert list(rrf.top["q1"].values()) == [3.0, 2.0, 1.0]
    # One BM25 and one kNN body per query, whatever the number of configurations.
    assert engine.bodies == 2 * 2


def test_deep_ranking_reaches_further() -> None:
    (rrf,) = run(MemoryEngine(LEX, SEM), "rrf", {"q1": "solar"}, depth=Depth(top_n=1, deep_n=4))
    assert list(rrf.top["q1"]) == ["a"]
    assert sorted(rrf.deep["q1"]) == ["a", "b", "c", "d"]


def test_native_is_unavailable_with_the_reason_and_others_still_run() -> None:
    native, rrf = run(MemoryEngine(LEX, SEM), "native,rrf", {"q1": "solar"}, native_unavailable="no plugin")
    assert native.unavailable == "not available on this engine: no plugin"
    assert native.top == {}
    assert rrf.top["q1"]


def test_native_answered_on_the_client_is_reported_not_counted() -> None:
    (native,) = run(MemoryEngine(LEX, SEM), "native", {"q1": "solar"})
    assert native.unavailable is not None
    assert "client-side fusion" in native.unavailable
    assert native.top == {}


def test_degraded_answers_are_counted() -> None:
    (rrf,) = run(MemoryEngine(LEX, SEM, fail=["knn"]), "rrf", {"q1": "a", "q2": "b"}, depth=Depth(deep=False))
    assert list(rrf.top["q1"]) == ["a", "b", "c"]
    assert list(rrf.warnings.values()) == [2]


def test_a_warning_is_counted_once_per_query_with_the_deep_ranking_too() -> None:
    (rrf,) = run(MemoryEngine(LEX, SEM, fail=["knn"]), "rrf", {"q1": "a", "q2": "b"}, depth=Depth(top_n=2, deep_n=4))
    assert set(rrf.deep) == {"q1", "q2"}
    assert list(rrf.warnings.values()) == [2]


def test_a_query_too_long_for_the_clause_limit_is_answered_with_a_warning() -> None:
    long_query = " ".join(f"term{index}" for index in range(400))
    (bm25,) = run(MemoryEngine(LEX, SEM), "bm25", {"q1": long_query}, depth=Depth(deep=False))
    assert list(bm25.top["q1"]) == ["a", "b", "c"]
    ((warning, count),) = bm25.warnings.items()
    assert count == 1
    assert warning.startswith("the query is too long for the engine's clause limit: BM25 searched at most its first")


def test_memo_engine_forgets_between_queries_and_keeps_no_failures() -> None:
    engine = CountingEngine(LEX, SEM, fail=["knn"])
    memo = MemoEngine(engine)
    bm25 = {"size": 2, "query": {"match": {"body": "x"}}}
    knn = {"size": 2, "query": {"knn": {}}}

    async def twice() -> None:
        first = await memo.msearch("idx", [bm25, knn])
        second = await memo.msearch("idx", [bm25, knn])
        assert isinstance(first[1], errors.EngineError)
        assert isinstance(second[1], errors.EngineError)
        assert first[0] is second[0]
        memo.forget()
        await memo.msearch("idx", [bm25])

    asyncio.run(twice())
    assert engine.bodies == 2 + 1 + 1


def test_doc_run_keeps_the_order_of_first_appearance() -> None:
    response = SearchResponse(
        query="q",
        search_mode="hybrid",
        took_ms=1.0,
        results=[SearchHit(id=i, doc_id=i.split("#")[0], score=1.0) for i in ("x#0", "y#0", "x#1")],
    )
    assert doc_run(response) == {"x": 2.0, "y": 1.0}


@pytest.mark.parametrize("names", ["bm25", "rrf,linear,dbsf,adaptive,default"])
def test_every_configuration_answers_every_query(names: str) -> None:
    outcomes = run(MemoryEngine(LEX, SEM), names, {"q1": "solar", "q2": "wind"})
    for outcome in outcomes:
        assert set(outcome.top) == {"q1", "q2"}
        assert set(outcome.deep) == {"q1", "q2"}
