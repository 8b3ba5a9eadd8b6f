"""The orchestrator over an in-memory engine: degradation, depth, explain, caches and invariants.

The in-memory engine (tests/support/memory_engine.py) answers each kind of body from fixed result
lists and can fail or stall per retriever; tests assert on the responses, not on calls made.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge import errors
from esbridge.config.pipeline import GraphSettings, PipelineSettings
from esbridge.engines.base import SearchResult
from esbridge.query.graph_reader import LINKED_CHUNKS
from esbridge.query.models import Filters, SearchRequest
from tests.support.memory_engine import LEX, NOW, SEM, MemoryEngine, StubEmbedder, doc, run, searcher


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


def test_bm25_is_in_flight_while_the_query_is_embedded() -> None:
    engine = MemoryEngine(LEX, SEM)
    run(searcher(engine, StubEmbedder(delay=0.2), execution="concurrent"))
    assert engine.started["knn"] - engine.started["bm25"] >= 0.15


def test_the_embedding_is_handed_to_its_thread_before_the_bm25_request_is_sent() -> None:
    # The embedding is the longest step: it must not wait for the lexical request to be serialised.
    submitted: list[float] = []

    class Recording(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(time.monotonic())  # asyncio's loop.time() is time.monotonic()
            return super().submit(fn, *args, **kwargs)

    engine = MemoryEngine(LEX, SEM)
    hybrid = searcher(engine, StubEmbedder(delay=0.05), execution="concurrent")

    async def search() -> Any:
        asyncio.get_running_loop().set_default_executor(Recording(max_workers=2))
        return await hybrid.search(SearchRequest(query="solar energy"))

    response = asyncio.run(search())
    assert response.search_mode == "hybrid"
    assert submitted and submitted[0] <= engine.started["bm25"]
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


@pytest.mark.parametrize("top_n", [0, 51])
def test_top_n_outside_its_range_is_refused(top_n: int) -> None:
    with pytest.raises((errors.ConfigError, ValueError), match="top_n"):
        run(searcher(MemoryEngine(LEX, SEM)), top_n=top_n)


def test_retrievers_are_asked_for_top_k() -> None:
    many = [(f"x{n}#0", 100.0 - n) for n in range(200)]
    response = run(searcher(MemoryEngine(many, many)), top_n=30, explain=True)
    assert response.details.top_k == 60
    ranks = [hit.explain.retrievers["bm25"].rank for hit in response.results]
    assert max(ranks) <= 60 and len(response.results) == 30


def test_an_identifier_query_goes_bm25_only_with_adaptive_fusion() -> None:
    embedder = StubEmbedder()
    response = run(searcher(MemoryEngine(LEX, SEM), embedder), query="PII-2024-0042", fusion="adaptive")
    assert response.search_mode == "lexical-only"
    assert embedder.calls == 0, "the query is not even embedded"
    assert response.details.fusion_decision is not None
    assert response.details.fusion_decision.identifiers == ["PII-2024-0042"]


def test_recency_multiplies_recent_documents() -> None:
    sources = {
        "a#0": doc("a", modified_at=(NOW - timedelta(days=100)).isoformat()),
        "c#0": doc("c", modified_at=(NOW - timedelta(days=2)).isoformat()),
    }
    # RRF: under min-max (the default) the last BM25 hit, c, scores 0, and 0 x 1.2 is still 0.
    response = run(searcher(MemoryEngine(LEX, [], sources), fusion="rrf"), explain=True)
    by_id = {hit.id: hit.explain for hit in response.results}
    assert by_id["c#0"].recency_multiplier == 1.2
    assert by_id["a#0"].recency_multiplier == 1.0
    plain = run(searcher(MemoryEngine(LEX, [], sources), fusion="rrf"), explain=True, recency=False)
    assert {hit.explain.recency_multiplier for hit in plain.results} == {1.0}


def test_graph_expansion_adds_linked_documents_below_direct_results() -> None:
    sources = {
        "a#0": doc("a", links=["z"]),
        "b#0": doc("b"),
        "z#0": doc("z", title="Linked"),
        "w#0": doc("w", links=["a"]),
    }
    engine = MemoryEngine([("a#0", 5.0), ("b#0", 4.0)], [], sources)
    # RRF: under min-max (the default) b, the last hit, scores 0 and its neighbours can only tie with it.
    response = run(searcher(engine, fusion="rrf", graph=GraphSettings(enabled=True)), explain=True, top_n=5)
    ids = [hit.id for hit in response.results]
    assert ids[:2] == ["a#0", "b#0"]
    assert set(ids[2:]) == {"z#0", "w#0"}
    linked = next(hit for hit in response.results if hit.id == "z#0")
    assert linked.explain.neighbour_of == ["a#0"]
    assert linked.title == "Linked"
    assert linked.score < response.results[1].score


def test_a_neighbours_explanation_reproduces_its_score() -> None:
    sources = {
        "a#0": doc("a", links=["y", "z"], link_weights={"y": 4, "z": 1}),
        "b#0": doc("b"),
        "y#0": doc("y"),
        "z#0": doc("z"),
    }
    engine = MemoryEngine([("a#0", 5.0), ("b#0", 4.0)], [], sources)
    graph = GraphSettings(enabled=True, link_weighting="proportional", placement="below_all")
    response = run(searcher(engine, fusion="rrf", graph=graph), explain=True, top_n=5)
    top = response.results[0].explain
    best = top.fused_score * top.recency_multiplier
    by_id = {hit.id: hit for hit in response.results}
    assert (by_id["y#0"].explain.link_strength, by_id["z#0"].explain.link_strength) == (1.0, 0.25)
    for item in ("y#0", "z#0"):
        hit = by_id[item]
        assert hit.explain.graph_score is not None
        assert hit.score == pytest.approx(hit.explain.graph_score / best)
    assert top.graph_score is None and top.link_strength is None


def test_a_truncated_link_answer_is_named_in_the_warnings() -> None:
    fans = {f"fan{n}#0": doc(f"fan{n}", links=["a"]) for n in range(LINKED_CHUNKS + 5)}
    engine = MemoryEngine([("a#0", 5.0), ("b#0", 4.0)], [], {"a#0": doc("a"), "b#0": doc("b"), **fans})
    response = run(searcher(engine, fusion="rrf", graph=GraphSettings(enabled=True)), top_n=5)
    # 505 chunks link to a; a and b, the seeds, are read by a request of their own.
    assert f"graph expansion read {LINKED_CHUNKS} of the {LINKED_CHUNKS + 5} chunks linked" in response.warnings[0]
    complete = MemoryEngine([("a#0", 5.0), ("b#0", 4.0)], [], {"a#0": doc("a"), "z#0": doc("z", links=["a"])})
    assert run(searcher(complete, fusion="rrf", graph=GraphSettings(enabled=True)), top_n=5).warnings == []


def test_neighbours_that_are_missing_or_filtered_out_are_left_out() -> None:
    sources = {
        "a#0": doc("a", links=["old", "dangling", "kept"]),
        "old#0": {**doc("old"), "status": "deprecated"},
        "kept#0": doc("kept"),
    }
    engine = MemoryEngine([("a#0", 5.0)], [], sources)
    response = run(searcher(engine, fusion="rrf", graph=GraphSettings(enabled=True)), explain=True, top_n=5)
    assert [hit.id for hit in response.results] == ["a#0", "kept#0"]
    with_old = run(
        searcher(engine, fusion="rrf", graph=GraphSettings(enabled=True)),
        top_n=5,
        filters=Filters(include_deprecated=True),
    )
    assert {hit.id for hit in with_old.results} == {"a#0", "kept#0", "old#0"}


def test_results_are_cached_for_identical_requests() -> None:
    engine = MemoryEngine(LEX, SEM)
    hybrid = searcher(engine)
    first = asyncio.run(hybrid.search(SearchRequest(query="q")))
    engine.fail = {"bm25", "knn"}
    second = asyncio.run(hybrid.search(SearchRequest(query="q")))
    assert second.details.cached is True
    assert [hit.id for hit in second.results] == [hit.id for hit in first.results]


def test_forgotten_answers_are_searched_again() -> None:
    engine = MemoryEngine(LEX, SEM)
    hybrid = searcher(engine)
    asyncio.run(hybrid.search(SearchRequest(query="q")))
    hybrid.forget_responses()
    engine.fail = {"bm25", "knn"}  # a cached answer would still come back
    with pytest.raises(errors.EngineUnavailable):
        asyncio.run(hybrid.search(SearchRequest(query="q")))


def test_degraded_answers_are_not_cached() -> None:
    engine = MemoryEngine(LEX, SEM, fail=["knn"])
    hybrid = searcher(engine)
    first = asyncio.run(hybrid.search(SearchRequest(query="q")))
    assert first.search_mode == "lexical-only"
    engine.fail = set()
    second = asyncio.run(hybrid.search(SearchRequest(query="q")))
    assert second.search_mode == "hybrid"
    assert second.details.cached is False


def test_a_cached_answer_is_a_copy() -> None:
    hybrid = searcher(MemoryEngine(LEX, SEM))
    first = asyncio.run(hybrid.search(SearchRequest(query="q")))
    first.warnings.append("changed by a caller")
    second = asyncio.run(hybrid.search(SearchRequest(query="q")))
    assert second.details.cached is True
    assert second.warnings == []


def test_weights_naming_no_retriever_or_all_zero_are_refused() -> None:
    with pytest.raises(
        errors.ConfigError, match=r"weights name no retriever of this pipeline: bm52; its retrievers: bm25, knn"
    ):
        run(searcher(MemoryEngine(LEX, SEM)), weights={"bm52": 5.0})
    with pytest.raises(errors.ConfigError, match="above 0"):
        run(searcher(MemoryEngine(LEX, SEM)), weights={"bm25": 0.0, "knn": 0.0})
    lexical = run(searcher(MemoryEngine(LEX, SEM)), weights={"knn": 0.0}, explain=True)
    assert lexical.results[0].explain is not None
    assert lexical.results[0].explain.contributions.get("knn", 0.0) == 0.0


def test_asking_for_re_ranking_without_a_re_ranker_says_so() -> None:
    response = run(searcher(MemoryEngine(LEX, SEM)), rerank=True)
    assert response.warnings == ["re-ranking was asked for, but no re-ranker is configured (pipeline.rerank)"]
    assert run(searcher(MemoryEngine(LEX, SEM))).warnings == []


def test_unknown_fusion_method_names_the_known_ones() -> None:
    with pytest.raises(errors.ConfigError, match="rrf"):
        run(searcher(MemoryEngine(LEX, SEM)), fusion="nope")


run_lists = st.lists(
    st.tuples(st.sampled_from([f"d{n}#{c}" for n in range(30) for c in range(2)]), st.floats(0.01, 50)),
    max_size=80,
    unique_by=lambda pair: pair[0],
).map(lambda pairs: sorted(pairs, key=lambda pair: -pair[1]))


@settings(max_examples=60, deadline=None)
@given(
    bm25=run_lists,
    knn=run_lists,
    top_n=st.integers(1, 50),
    fusion=st.sampled_from(["rrf", "linear", "dbsf", "adaptive"]),
    collapse=st.booleans(),
)
def test_invariants_hold_for_any_retrieved_lists(
    bm25: list[tuple[str, float]], knn: list[tuple[str, float]], top_n: int, fusion: str, collapse: bool
) -> None:
    if not bm25 and not knn:
        return
    hybrid = searcher(MemoryEngine(bm25, knn), cache={"results": 0, "embeddings": 0})
    response = asyncio.run(hybrid.search(SearchRequest(query="q", top_n=top_n, fusion=fusion, collapse=collapse,
                                                        explain=True)))  # fmt: skip
    top_k = max(10, 2 * top_n)
    assert top_k >= 10
    results = response.results
    assert len(results) <= top_n
    assert len({hit.id for hit in results}) == len(results)
    scores = [hit.score for hit in results]
    assert all(0.0 <= score <= 1.0 for score in scores)
    if results:
        assert scores[0] == 1.0
    assert all(a >= b for a, b in itertools.pairwise(scores))
    for hit in results:
        assert hit.explain is not None
        assert all(r.rank <= top_k for r in hit.explain.retrievers.values())
    assert not any(math.isnan(score) for score in scores)
