"""A result's explanation adds up to the score it shows, whatever the fused scores are: all zero, tied, one
result, negative (a fusion plugin may give any finite score), with recency and lifting by links on top."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.cli.search import render
from esbridge.config.pipeline import GraphSettings
from esbridge.query.fusion import FUSION_METHODS, register_fusion
from esbridge.query.fusion.result import ranked
from esbridge.query.models import Explain, ScoreRange, SearchHit, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.types import FusionResult, Runs
from tests.support.memory_engine import NOW, MemoryEngine, StubEmbedder, doc, searcher

GIVEN: dict[str, float] = {}
"""The scores the ``given`` fusion method answers with, set by each example."""


def given_scores(runs: Runs, *, weights: Mapping[str, float] | None = None, **params: Any) -> FusionResult:
    return ranked(GIVEN, {item: {"plugin": score} for item, score in GIVEN.items()})


@pytest.fixture(scope="module", autouse=True)
def registry() -> Iterator[MutableMapping[str, Any]]:
    saved = dict(FUSION_METHODS)
    register_fusion("given", given_scores)
    yield FUSION_METHODS
    FUSION_METHODS.clear()
    FUSION_METHODS.update(saved)


def shown_by(how: Explain) -> float:
    """The score a result's explanation gives it: its terms, then the normalisation it names."""
    terms = how.fused_score * how.recency_multiplier + (how.link_lift or 0.0) - (how.link_shift or 0.0)
    if (reranking := how.reranking) is not None:
        assert reranking.score_before == pytest.approx(terms, rel=1e-9, abs=1e-12)
        assert reranking.reranker_score == how.rerank_score
        combined = reranking.weight * _scaled(reranking.reranker_score, reranking.reranker_range) + (
            1 - reranking.weight
        ) * _scaled(reranking.score_before, reranking.before_range)
        assert reranking.combined == pytest.approx(combined, rel=1e-9, abs=1e-12)
        terms = reranking.base + reranking.combined
    assert how.unnormalized_score == pytest.approx(terms, rel=1e-9, abs=1e-12)
    scale = how.normalization
    assert scale is not None and how.unnormalized_score is not None
    if scale.low == scale.high:
        return 1.0
    return max((how.unnormalized_score - scale.low) / (scale.high - scale.low), 0.0)


def _scaled(score: float, span: ScoreRange) -> float:
    return (score - span.low) / (span.high - span.low) if span.high > span.low else 1.0


def assert_adds_up(results: list[SearchHit]) -> None:
    assert results and results[0].score == 1.0
    top = results[0].explain
    assert top is not None and top.normalization is not None
    assert top.normalization.high == top.unnormalized_score, "1 is the best score"
    for hit in results:
        assert hit.explain is not None and hit.explain.final_score == hit.score
        assert shown_by(hit.explain) == pytest.approx(hit.score, rel=1e-9, abs=1e-12), hit.id
        assert 0.0 <= hit.score <= 1.0


class GivenReranker:
    """Scores each text by ``RERANKED``, keyed by its position among the texts it is given."""

    name = "given"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [RERANKED[number % len(RERANKED)] for number in range(len(texts))]


RERANKED: list[float] = [0.0]


def answer(
    scores: Mapping[str, float],
    dates: Mapping[str, str],
    links: Mapping[str, list[str]],
    reranker: GivenReranker | None = None,
    **pipeline: Any,
) -> SearchResponse:
    GIVEN.clear()
    GIVEN.update(scores)
    sources = {
        item: doc(item.split("#")[0], links=links.get(item.split("#")[0], []), modified_at=dates.get(item))
        for item in scores
    }
    engine = MemoryEngine([(item, 1.0) for item in scores], [], sources)
    hybrid = searcher(engine, fusion="given", recency={"enabled": True}, cache={"results": 0}, **pipeline)
    if reranker is not None:
        hybrid = HybridSearcher(engine, "idx", StubEmbedder(), hybrid.pipeline, reranker=reranker, clock=lambda: NOW)
    request = SearchRequest(query="solar energy", top_n=len(scores), explain=True, collapse=False)
    return asyncio.run(hybrid.search(request))


def search(
    scores: Mapping[str, float], dates: Mapping[str, str], links: Mapping[str, list[str]], **pipeline: Any
) -> list[SearchHit]:
    return answer(scores, dates, links, **pipeline).results


@pytest.mark.parametrize(
    ("scores", "shown"),
    [
        ({"a#0": 0.0, "b#0": 0.0}, [1.0, 1.0]),  # nothing positive, all equal: each is the best
        ({"a#0": -1.0}, [1.0]),
        ({"a#0": 0.0, "b#0": -1.0, "c#0": -2.0}, [1.0, 0.5, 0.0]),  # placed between the worst and the best
        ({"a#0": 2.0, "b#0": 0.0, "c#0": -1.0}, [1.0, 0.0, 0.0]),  # over the best; below 0 shows as 0
    ],
)
def test_a_search_with_no_positive_score_explains_its_normalisation(
    scores: dict[str, float], shown: list[float]
) -> None:
    results = search(scores, {}, {})
    assert [hit.score for hit in results] == shown
    assert_adds_up(results)
    top = results[0].explain
    assert top is not None and top.normalization is not None
    best, worst = max(scores.values()), min(scores.values())
    assert (top.normalization.low, top.normalization.high) == ((0.0, best) if best > 0 else (worst, best))


def test_the_readable_explanation_says_how_a_score_with_no_positive_one_above_it_was_shown() -> None:
    lines = render(answer({"a#0": 0.0, "b#0": -1.0, "c#0": -2.0}, {}, {}), explain=True).splitlines()
    said = {line.split("[")[-1].rstrip("]"): lines[number + 1] for number, line in enumerate(lines) if "[" in line}
    assert said["b#0"].endswith(
        "; no result scored above 0: -1.000 placed between the lowest -2.000 and the best 0.000"
    )
    lines = render(answer({"a#0": 0.0, "b#0": 0.0}, {}, {}), explain=True).splitlines()
    assert lines[-1].endswith("; every result scored 0.000: each shown as 1")
    lines = render(answer({"a#0": 2.0, "b#0": -1.0}, {}, {}), explain=True).splitlines()
    assert lines[-1].endswith("; scored -1.000, below 0: shown as 0")
    assert lines[-3].endswith("(1.000)"), "a result over the best one's says nothing more"


ITEMS = [f"d{n}#0" for n in range(6)]
SCORE = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]), st.floats(-5, 5, allow_nan=False))
AGE = st.sampled_from([None, "2026-11-20T00:00:00Z", "2026-11-01T00:00:00Z", "2020-01-01T00:00:00Z"])


@settings(max_examples=120, deadline=None)
@given(
    scores=st.lists(SCORE, min_size=1, max_size=len(ITEMS)),
    ages=st.lists(AGE, min_size=len(ITEMS), max_size=len(ITEMS)),
    links=st.lists(st.lists(st.sampled_from([item[:2] for item in ITEMS]), max_size=3), min_size=6, max_size=6),
    lifting=st.booleans(),
)
def test_the_explained_terms_add_up_to_the_shown_score(
    scores: list[float], ages: list[str | None], links: list[list[str]], lifting: bool
) -> None:
    given = dict(zip(ITEMS, scores, strict=False))
    dates = {item: age for item, age in zip(ITEMS, ages, strict=True) if age is not None}
    linked = {item[:2]: targets for item, targets in zip(ITEMS, links, strict=True)}
    graph = GraphSettings(enabled=True, mode="lift", keep_top=1, seeds=2, rescore_weight=1.0) if lifting else None
    results = search(given, dates, linked, **({"graph": graph} if graph else {}))
    assert {hit.id for hit in results} == set(given)
    assert_adds_up(results)


@settings(max_examples=80, deadline=None)
@given(
    scores=st.lists(SCORE, min_size=1, max_size=len(ITEMS)),
    ages=st.lists(AGE, min_size=len(ITEMS), max_size=len(ITEMS)),
    reranked=st.lists(SCORE, min_size=1, max_size=len(ITEMS)),
    top=st.integers(1, len(ITEMS)),
    weight=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_a_re_ranked_results_terms_add_up_to_its_shown_score_and_name_its_score_before_re_ranking(
    scores: list[float], ages: list[str | None], reranked: list[float], top: int, weight: float
) -> None:
    # The explanation gave only the re-ranker's score, and unnormalized_score (the re-ranked placement) followed
    # from no term: the score a result had before re-ranking was nowhere.
    RERANKED[:] = reranked
    given = dict(zip(ITEMS, scores, strict=False))
    dates = {item: age for item, age in zip(ITEMS, ages, strict=True) if age is not None}
    rerank = {"enabled": True, "top": top, "weight": weight}
    results = answer(given, dates, {}, GivenReranker(), rerank=rerank).results
    assert_adds_up(results)
    explained = [hit.explain for hit in results if hit.explain is not None]
    head = [how for how in explained if how.reranking is not None]
    assert len(head) == min(top, len(given))
    rest = [how.unnormalized_score or 0.0 for how in explained if how.reranking is None]
    assert all(how.reranking.base == max(rest, default=0.0) + 1 for how in head if how.reranking is not None)
