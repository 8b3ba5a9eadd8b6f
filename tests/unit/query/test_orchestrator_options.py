"""The orchestrator over an in-memory engine: the request's depth and fusion, recency, graph expansion, weights,
re-ranking, the cache of answers, and invariants that hold for any retrieved lists.

The in-memory engine (tests/support/memory_engine.py) answers each kind of body from fixed result
lists and can fail or stall per retriever; tests assert on the responses, not on calls made.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge import errors
from esbridge.config.pipeline import GraphSettings
from esbridge.query.graph_reader import LINKED_CHUNKS
from esbridge.query.models import Filters, SearchRequest
from tests.support.memory_engine import LEX, NOW, SEM, MemoryEngine, StubEmbedder, doc, run, searcher


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


def test_a_search_answers_one_result_per_document_unless_asked_for_chunks() -> None:
    # Two chunks of a, one of b: judgements, users and agents count documents, and the evaluation measured so.
    lexical, semantic = [("a#0", 9.0), ("a#1", 8.0), ("b#0", 1.0)], [("a#1", 0.9), ("a#0", 0.8), ("b#0", 0.5)]
    found = run(searcher(MemoryEngine(lexical, semantic)))
    assert [(hit.id, hit.doc_id) for hit in found.results] == [("a#0", "a"), ("b#0", "b")]
    chunks = run(searcher(MemoryEngine(lexical, semantic)), collapse=False)
    assert sorted(hit.id for hit in chunks.results) == ["a#0", "a#1", "b#0"]


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
