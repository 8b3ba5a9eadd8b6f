"""The orchestrator over an in-memory engine: fusion with explain, degradation when a retriever fails, stalls or
finds nothing, the two ways of sending the requests, and failures that end a search with nothing left running.

The in-memory engine (tests/support/memory_engine.py) answers each kind of body from fixed result
lists and can fail or stall per retriever; tests assert on the responses, not on calls made.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.base import QUERY_THREADS
from esbridge.engines.base import SearchResult
from esbridge.query.models import SearchRequest
from tests.support.memory_engine import LEX, SEM, MemoryEngine, StubEmbedder, run, searcher


def test_hybrid_fuses_both_lists_and_explains() -> None:
    response = run(searcher(MemoryEngine(LEX, SEM), fusion="rrf"), explain=True, top_n=4)
    assert response.search_mode == "hybrid"
    assert [hit.id for hit in response.results][:2] == ["b#0", "a#0"]  # b: ranks 2+1, a: ranks 1+3
    assert response.results[0].score == 1.0
    first = response.results[0].explain
    assert first.retrievers["bm25"].rank == 2 and first.retrievers["knn"].rank == 1
    assert first.contributions == pytest.approx({"bm25": 1 / 62, "knn": 1 / 61})
    assert response.warnings == []


def test_a_stalled_knn_degrades_to_lexical_only() -> None:
    response = run(searcher(MemoryEngine(LEX, SEM, stall=["knn"]), knn_timeout_s=0.05, execution="concurrent"))
    assert response.search_mode == "lexical-only"
    assert [hit.id for hit in response.results] == ["a#0", "b#0", "c#0"]
    assert any("knn did not answer within 0.05s" in warning for warning in response.warnings)


def test_an_unembeddable_query_degrades_to_lexical_only() -> None:
    response = run(searcher(MemoryEngine(LEX, SEM), StubEmbedder(fail=True)))
    assert response.search_mode == "lexical-only"
    assert any("could not be embedded" in warning for warning in response.warnings)


def test_a_failed_bm25_degrades_to_semantic_only() -> None:
    response = run(searcher(MemoryEngine(LEX, SEM, fail=["bm25"])))
    assert response.search_mode == "semantic-only"
    assert [hit.id for hit in response.results] == ["b#0", "d#0", "a#0"]
    assert any("bm25 failed" in warning for warning in response.warnings)


@pytest.mark.parametrize("fusion", ["qpp", "rrf", "linear", "dbsf"])
@pytest.mark.parametrize(("zero", "failing"), [("bm25", "knn"), ("knn", "bm25")])
def test_a_retriever_weighted_0_that_alone_answers_keeps_its_own_order(fusion: str, zero: str, failing: str) -> None:
    """With the other retriever down, the degraded answer is the zero-weighted one's ranking, not ties in id order."""
    ranked = [("c#0", 9.0), ("a#0", 7.0), ("b#0", 3.0)]
    engine = MemoryEngine(ranked, ranked, fail=[failing])
    response = run(searcher(engine, fusion=fusion), weights={zero: 0.0}, explain=True)
    assert response.search_mode == ("lexical-only" if zero == "bm25" else "semantic-only")
    assert [hit.id for hit in response.results] == ["c#0", "a#0", "b#0"]
    assert [hit.score for hit in response.results][1] < 1.0


@pytest.mark.parametrize("fusion", ["qpp", "rrf", "linear", "dbsf"])
@pytest.mark.parametrize("zero", ["bm25", "knn"])
def test_a_retriever_weighted_0_whose_hits_are_all_there_is_keeps_its_own_order(fusion: str, zero: str) -> None:
    """The other retriever answered but found nothing (a word the index lacks): as when it fails, the answer is
    the zero-weighted one's ranking, not every result tied at 1.0 in id order."""
    ranked = [("c#0", 9.0), ("a#0", 7.0), ("b#0", 3.0)]
    engine = MemoryEngine(ranked if zero == "bm25" else [], ranked if zero == "knn" else [])
    response = run(searcher(engine, fusion=fusion), weights={zero: 0.0}, explain=True)
    assert [hit.id for hit in response.results] == ["c#0", "a#0", "b#0"]
    assert [hit.score for hit in response.results][1] < 1.0


@pytest.mark.parametrize("fusion", ["qpp", "rrf", "linear"])
@pytest.mark.parametrize(("zero", "other"), [("knn", "bm25"), ("bm25", "knn")])
@pytest.mark.parametrize("failing", [False, True])
def test_results_ranked_by_a_retriever_weighted_0_say_so(fusion: str, zero: str, other: str, failing: bool) -> None:
    """`--weights knn=0` asked for no kNN: when BM25 finds nothing (or fails), the answer is kNN's, and says so."""
    ranked = [("c#0", 9.0), ("a#0", 7.0), ("b#0", 3.0)]
    lists = {zero: ranked, other: LEX if failing else []}
    engine = MemoryEngine(lists["bm25"], lists["knn"], fail=[other] if failing else [])
    response = run(searcher(engine, fusion=fusion), weights={zero: 0.0})
    assert [hit.id for hit in response.results] == ["c#0", "a#0", "b#0"]
    assert (
        f"{other} gave no results, so these are ranked by {zero} alone, though the weights give it 0"
        in response.warnings
    ), response.warnings
    assert run(searcher(MemoryEngine(LEX, SEM), fusion=fusion), weights={zero: 0.0}).warnings == []


def test_a_long_document_filling_every_list_does_not_leave_fewer_than_top_n_documents() -> None:
    """Twelve chunks of one document fill both lists of 10; with collapse the retrievers are asked again, deeper,
    until top_n documents are there (and not without collapse, nor when a list was not full)."""
    long = [(f"long#{n}", 20.0 - n) for n in range(12)]
    short = [("a#0", 5.0), ("b#0", 4.0), ("c#0", 3.0)]
    engine = MemoryEngine(long + short, [(item, score / 20) for item, score in long + short])
    response = run(searcher(engine, fusion="rrf"), top_n=3)
    assert [hit.doc_id for hit in response.results] == ["long", "a", "b"]
    assert response.details.top_k == 40
    chunks = run(searcher(engine, fusion="rrf"), top_n=3, collapse=False)
    assert [hit.id for hit in chunks.results] == ["long#0", "long#1", "long#2"] and chunks.details.top_k == 10
    few = MemoryEngine(long[:4], [])
    assert [hit.doc_id for hit in run(searcher(few, fusion="rrf"), top_n=3).results] == ["long"]


class _SlowWhenDeep(MemoryEngine):
    """Answers lists of 10 at once; a deeper request fails, or takes ``delay`` seconds."""

    def __init__(self, *lists: Any, deep: str, delay: float = 0.0) -> None:
        super().__init__(*lists)
        self.deep, self.delay = deep, delay

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if int(body.get("size", 0)) > 10:
            if self.deep == "fail":
                raise errors.EngineResponseError("boom", url=self.url, operation="search", index=index, status=500)
            await asyncio.sleep(self.delay)
        return await super().search(index, body)


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
@pytest.mark.parametrize("deep", ["fail", "stall"])
def test_a_deeper_round_that_fails_leaves_the_answer_before_it(execution: str, deep: str) -> None:
    """The lists of 10 held one document; asked again deeper, the engine failed or hung: the first answer stands,
    saying so, instead of the search failing with 503 or 504."""
    long = [(f"long#{n}", 20.0 - n) for n in range(12)] + [("a#0", 5.0)]
    engine = _SlowWhenDeep(long, [(item, score / 20) for item, score in long], deep=deep, delay=10)
    pipeline: dict[str, Any] = {"fusion": "rrf", "bm25_timeout_s": 0.1, "knn_timeout_s": 0.1, "execution": execution}
    response = run(searcher(engine, **pipeline), top_n=3)
    assert response.search_mode == "hybrid" and [hit.doc_id for hit in response.results] == ["long"]
    assert response.details.top_k == 10
    assert any("asked again for 40 chunks" in warning for warning in response.warnings), response.warnings


def test_the_deeper_rounds_share_one_retriever_timeout() -> None:
    """Each deeper round answering just within the timeout took it again: five rounds (10 to 1000 chunks) took
    five timeouts. Together they take one, and the deepest answer that came in time is kept."""
    long = [(f"long#{n}", 2000.0 - n) for n in range(2000)]
    engine = _SlowWhenDeep(long, [(item, score / 2000) for item, score in long], deep="slow", delay=0.3)
    started = time.perf_counter()
    response = run(searcher(engine, fusion="rrf", bm25_timeout_s=0.4, knn_timeout_s=0.4), top_n=3)
    assert time.perf_counter() - started < 1.0  # one round of 0.3 s within the 0.4 s; five took 1.2 s or more
    assert response.details.top_k == 40 and [hit.doc_id for hit in response.results] == ["long"]
    assert any("no answer within 0.4s" in warning for warning in response.warnings), response.warnings


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_an_identifier_query_bm25_finds_nothing_for_is_fused_with_knn(execution: str) -> None:
    """adaptive's rule for an empty lexical run is to fuse every run; kNN, skipped at first, is asked for it.
    Nothing failed: the fusion's decision explains it, no warning flags the answer as degraded, and the answer is
    cached as any hybrid one is (a warning kept every such query from the cache)."""
    engine = MemoryEngine([], SEM)
    hybrid = searcher(engine, fusion="adaptive", execution=execution)
    response = run(hybrid, query="PII-2024-0042", explain=True)
    assert response.search_mode == "hybrid"
    assert [hit.id for hit in response.results] == ["b#0", "d#0", "a#0"]
    first = response.results[0].explain
    assert first is not None and first.contributions == pytest.approx({"knn": 1 / 61})  # rrf, k=60, rank 1
    assert response.warnings == [] and response.details.fusion_decision is not None
    assert response.details.fusion_decision.reason == (
        "identifier query, but 'bm25' found nothing: 'bm25' weight x2; the lexical retrievers, asked alone for this "
        "query, found nothing, so kNN was asked as well"
    )
    again = run(hybrid, query="PII-2024-0042", explain=True)
    assert again.details.cached and again.results == response.results


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_an_identifier_query_whose_bm25_fails_is_answered_by_knn(execution: str) -> None:
    """adaptive answers an identifier with BM25 alone; when BM25 fails, kNN still answers (semantic-only)."""
    engine = MemoryEngine(LEX, SEM, fail=["bm25"])
    response = run(searcher(engine, fusion="adaptive", execution=execution), query="PII-2024-0042")
    assert response.search_mode == "semantic-only"
    assert [hit.id for hit in response.results] == ["b#0", "d#0", "a#0"]
    assert any("bm25 failed" in warning for warning in response.warnings)
    assert any("kNN answered instead" in warning for warning in response.warnings)
    healthy = MemoryEngine(LEX, SEM)
    assert run(searcher(healthy, fusion="adaptive"), query="PII-2024-0042").search_mode == "lexical-only"
    assert "knn" not in healthy.started  # while BM25 answers, kNN is not asked
    unembeddable = searcher(MemoryEngine(LEX, SEM, fail=["bm25"]), StubEmbedder(fail=True), fusion="adaptive")
    with pytest.raises(errors.EngineUnavailable, match="could not be embedded") as failed:
        run(unembeddable, query="PII-2024-0042")
    assert "kNN answered" not in str(failed.value)


def test_concurrent_is_the_default_and_a_stalled_msearch_round_trip_degrades_per_retriever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("esbridge.query.retrieval._MSEARCH_MARGIN_S", 0.05)
    assert PipelineSettings().execution == "concurrent"
    stalled = searcher(
        MemoryEngine(LEX, SEM, stall=["knn"]), knn_timeout_s=0.05, bm25_timeout_s=0.05, execution="msearch"
    )
    response = run(stalled)
    assert response.search_mode == "lexical-only"
    assert any("retried as separate requests" in warning for warning in response.warnings)
    assert any("knn did not answer" in warning for warning in response.warnings)


def test_msearch_mode_gives_the_same_answer_in_one_round_trip() -> None:
    concurrent = run(searcher(MemoryEngine(LEX, SEM), execution="concurrent"), explain=True)
    single = run(searcher(MemoryEngine(LEX, SEM), execution="msearch"), explain=True)
    assert [(hit.id, hit.score) for hit in single.results] == [(hit.id, hit.score) for hit in concurrent.results]
    assert "msearch" in single.details.timings_ms
    degraded = run(searcher(MemoryEngine(LEX, SEM, fail=["knn"]), execution="msearch"))
    assert degraded.search_mode == "lexical-only"
    assert any("knn failed" in warning for warning in degraded.warnings)


def test_a_missing_index_fails_the_search_and_leaves_no_task_behind() -> None:
    class Missing(MemoryEngine):
        async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
            await asyncio.sleep(0)
            raise errors.IndexNotFound("no such index", url=self.url, operation="search", index=index, status=404)

    unretrieved: list[dict[str, Any]] = []

    async def search() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unretrieved.append(context))
        with pytest.raises(errors.IndexNotFound):
            await searcher(Missing()).search(SearchRequest(query="solar energy"))
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()

    asyncio.run(search())
    assert unretrieved == []


def test_a_missing_index_seen_by_knn_stops_a_bm25_request_still_in_flight() -> None:
    class MissingForKnn(MemoryEngine):
        async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
            if "knn" in body.get("query", {}):
                raise errors.IndexNotFound("no such index", url=self.url, operation="search", index=index, status=404)
            return await super().search(index, body)

    async def search() -> tuple[float, set[asyncio.Task[Any]]]:
        started = time.monotonic()
        with pytest.raises(errors.IndexNotFound):
            await searcher(MissingForKnn(LEX, SEM, stall=["bm25"]), execution="concurrent").search(
                SearchRequest(query="solar energy")
            )
        elapsed = time.monotonic() - started
        await asyncio.sleep(0)
        return elapsed, {task for task in asyncio.all_tasks() if task is not asyncio.current_task() and not task.done()}

    elapsed, left = asyncio.run(search())
    assert elapsed < 5, "the stalled BM25 request (10 s) was not waited for"
    assert left == set()


def test_every_semantic_retriever_answers_when_several_are_configured() -> None:
    from esbridge.query.retrievers import RETRIEVERS, KnnRetriever

    RETRIEVERS.register("knn_again", KnnRetriever())
    try:
        hybrid = searcher(
            MemoryEngine(LEX, SEM),
            retrievers=["bm25", "knn", "knn_again"],
            weights={"bm25": 1.0, "knn": 1.0, "knn_again": 1.0},
            fusion="rrf",
            execution="concurrent",
        )
        response = run(hybrid, explain=True)
    finally:
        del RETRIEVERS["knn_again"]
    assert response.search_mode == "hybrid"
    best = response.results[0]
    assert best.id == "b#0"  # ranks 2, 1, 1
    assert list(best.explain.retrievers) == ["bm25", "knn", "knn_again"]
    assert best.explain.contributions == pytest.approx({"bm25": 1 / 62, "knn": 1 / 61, "knn_again": 1 / 61})


def test_a_qpp_model_fitted_for_other_vectors_says_so_in_its_decision() -> None:
    from esbridge.query.fusion.qpp import default_model

    shipped = run(searcher(MemoryEngine(LEX, SEM), fusion="qpp"))  # fitted on bge-small-en-v1.5 scores
    assert shipped.search_mode == "hybrid"
    assert shipped.details.fusion_decision is not None
    caution = shipped.details.fusion_decision.caution
    assert caution is not None
    assert "BAAI/bge-small-en-v1.5" in caution and "from stub" in caution
    own = {**default_model().as_params(), "embedding_model": "stub"}
    matching = run(searcher(MemoryEngine(LEX, SEM), fusion="qpp", fusion_params={"model": own}))
    assert matching.details.fusion_decision is not None
    assert matching.details.fusion_decision.caution is None
    assert matching.details.fusion_decision.knn_share in default_model().shares


def test_no_retriever_answering_is_an_error() -> None:
    with pytest.raises(errors.EngineUnavailable, match="bm25 failed"):
        run(searcher(MemoryEngine(LEX, SEM, fail=["bm25", "knn"])))


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_no_retriever_answering_in_time_is_a_timeout(execution: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung engine is told apart from one that fails (the service answers 504, not 503); one of each is not."""
    monkeypatch.setattr("esbridge.query.retrieval._MSEARCH_MARGIN_S", 0.05)
    timeouts: dict[str, Any] = {"bm25_timeout_s": 0.05, "knn_timeout_s": 0.05, "execution": execution}
    with pytest.raises(errors.EngineTimeout, match=r"bm25 did not answer within 0\.05s; knn did not"):
        run(searcher(MemoryEngine(LEX, SEM, stall=["bm25", "knn"]), **timeouts))
    with pytest.raises(errors.EngineUnavailable, match="bm25 failed") as mixed:
        run(searcher(MemoryEngine(LEX, SEM, fail=["bm25"], stall=["knn"]), **timeouts))
    assert not isinstance(mixed.value, errors.EngineTimeout)


def test_bm25_is_in_flight_while_the_query_is_embedded() -> None:
    engine = MemoryEngine(LEX, SEM)
    run(searcher(engine, StubEmbedder(delay=0.2), execution="concurrent"))
    assert engine.started["knn"] - engine.started["bm25"] >= 0.15


def test_the_embedding_is_handed_to_its_thread_before_the_bm25_request_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The embedding is the longest step: it must not wait for the lexical request to be serialised.
    started: list[float] = []
    submit = QUERY_THREADS.submit

    def recording(job: Callable[[], None]) -> None:
        started.append(time.monotonic())  # asyncio's loop.time() is time.monotonic()
        submit(job)

    monkeypatch.setattr(QUERY_THREADS, "submit", recording)
    engine = MemoryEngine(LEX, SEM)
    hybrid = searcher(engine, StubEmbedder(delay=0.05), execution="concurrent")
    response = run(hybrid)
    assert response.search_mode == "hybrid"
    assert started and started[0] <= engine.started["bm25"]
    assert response.details.timings_ms["embed"] >= 50


def test_a_retriever_that_cannot_build_its_body_fails_the_search_and_leaves_nothing_running() -> None:
    from esbridge.query.retrievers import RETRIEVERS

    class Broken:
        needs_vector = False

        def body(self, context: Any, vector: Any) -> Any:
            raise ValueError("this retriever has no body")

    RETRIEVERS.register("broken", Broken())
    try:
        hybrid = searcher(MemoryEngine(LEX, SEM), retrievers=["bm25", "broken", "knn"], execution="concurrent")

        async def search() -> set[asyncio.Task[Any]]:
            with pytest.raises(ValueError, match="no body"):
                await hybrid.search(SearchRequest(query="solar energy"))
            await asyncio.sleep(0)  # cancelled tasks finish on the next turn
            return {task for task in asyncio.all_tasks() if task is not asyncio.current_task() and not task.done()}

        assert asyncio.run(search()) == set(), "the BM25 request already created was cancelled"
    finally:
        del RETRIEVERS["broken"]
