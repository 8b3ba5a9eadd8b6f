"""Re-scoring the direct results by their links (graph modes ``rescore`` and ``lift``), by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.config.pipeline import GraphSettings
from esbridge.engines.base import SearchResult
from esbridge.query.graph import GraphOptions
from esbridge.query.link_rescore import lift, rescore
from tests.support.memory_engine import MemoryEngine, doc, run, searcher

# a has two chunks; c is linked with nothing among the results; x is not a result.
SCORES = {"a#0": 0.8, "a#1": 0.6, "b#0": 0.5, "c#0": 0.4}
DOC_OF = {item: item.split("#")[0] for item in SCORES}
LINKS = {"a": {"b": 4.0, "x": 9.0}, "b": {"a": 2.0}, "c": {"x": 1.0}}


def test_each_result_gains_the_weighted_mean_of_its_linked_results() -> None:
    result = rescore(SCORES, DOC_OF, LINKS, GraphOptions(mode="rescore", rescore_weight=0.5))
    # a: only b is a result (x is not): 0.5 x 0.5 = 0.25, on both of a's chunks; b: a (heavier link 4): 0.5 x 0.8.
    assert result.lifts == pytest.approx({"a": 0.25, "b": 0.4})
    assert result.scores == pytest.approx({"a#0": 1.05, "b#0": 0.9, "a#1": 0.85, "c#0": 0.4})
    assert list(result.scores) == ["a#0", "b#0", "a#1", "c#0"]
    assert result.linked == {"a": ["b#0"], "b": ["a#0"]}


def test_the_mean_is_weighted_by_link_strength() -> None:
    scores = {"a#0": 1.0, "b#0": 0.6, "c#0": 0.2}
    links = {"a": {"b": 3.0, "c": 1.0}}
    result = rescore(scores, {k: k[0] for k in scores}, links, GraphOptions(mode="rescore", rescore_weight=1.0))
    # a: (1 x 0.6 + 1/3 x 0.2) / (4/3) = 0.5; b and c are linked with a only.
    assert result.lifts == pytest.approx({"a": 0.5, "b": 1.0, "c": 1.0})
    assert result.linked["a"] == ["b#0", "c#0"]


def test_light_links_and_a_zero_weight_change_nothing() -> None:
    light = rescore(SCORES, DOC_OF, LINKS, GraphOptions(mode="rescore", min_link_weight=5.0))
    assert (light.lifts, light.scores) == ({}, dict(sorted(SCORES.items(), key=lambda e: (-e[1], e[0]))))
    off = rescore(SCORES, DOC_OF, LINKS, GraphOptions(mode="rescore", rescore_weight=0.0))
    assert off.lifts == {}


@pytest.mark.parametrize(("field", "value"), [("mode", "walk"), ("rescore_weight", -0.1)])
def test_bad_rescore_options_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GraphOptions(**{field: value})  # type: ignore[arg-type]


# lift: a and b are kept (keep_top 2); the seeds are a, b and c (seeds 3). c is tied to a (weight 2) and to x
# (4, not a result); e to a and b (1 each); d to nothing.
LIFT_SCORES = {"a#0": 1.0, "b#0": 0.8, "c#0": 0.5, "d#0": 0.4, "d#1": 0.35, "e#0": 0.3}
LIFT_LINKS = {"c": {"a": 2.0, "x": 4.0}, "e": {"a": 1.0, "b": 1.0}}
LIFTING = GraphOptions(mode="lift", keep_top=2, seeds=3, rescore_weight=0.5, link_weighting="proportional")


def test_lift_adds_the_link_weighted_scores_of_the_top_seeds_below_the_kept_documents() -> None:
    result = lift(LIFT_SCORES, {k: k[0] for k in LIFT_SCORES}, LIFT_LINKS, LIFTING)
    # c: 0.5 x (2/4 x 1.0) = 0.25; e: 0.5 x (1 x 1.0 + 1 x 0.8) = 0.9.
    assert result.lifts == pytest.approx({"c": 0.25, "e": 0.9})
    assert result.linked == {"c": ["a#0"], "e": ["a#0", "b#0"]}
    # Raised: c 0.75, d 0.4 and 0.35, e 1.2 would pass b (0.8), so everything below the kept is scaled by
    # 0.8 / 1.2 = 2/3 (a shift of 0.4 would have put d#1 at -0.05) and e lands just under b.
    assert list(result.scores) == ["a#0", "b#0", "e#0", "c#0", "d#0", "d#1"]
    assert result.scores == pytest.approx(
        {"a#0": 1.0, "b#0": 0.8, "e#0": 0.8, "c#0": 0.5, "d#0": 0.8 / 3, "d#1": 0.7 / 3}
    )
    assert result.scores["e#0"] < 0.8
    assert result.shifts == pytest.approx({"c#0": 0.25, "d#0": 0.4 / 3, "d#1": 0.35 / 3, "e#0": 0.4})


def test_lift_without_proportional_weighting_counts_each_link_alike() -> None:
    options = GraphOptions(mode="lift", keep_top=2, seeds=3, rescore_weight=0.5)
    assert lift(LIFT_SCORES, {k: k[0] for k in LIFT_SCORES}, LIFT_LINKS, options).lifts == pytest.approx(
        {"c": 0.5, "e": 0.9}
    )


def test_lift_leaves_a_list_no_longer_than_the_kept_documents_alone() -> None:
    scores = {"a#0": 1.0, "e#0": 0.3}
    result = lift(scores, {"a#0": "a", "e#0": "e"}, LIFT_LINKS, LIFTING)
    assert (result.scores, result.lifts) == (scores, {})
    with pytest.raises(ValueError, match="keep_top"):
        GraphOptions(mode="lift", keep_top=0)


def test_lift_reads_links_only_for_a_search_longer_than_the_kept_documents() -> None:
    sources = {"a#0": doc("a"), "b#0": doc("b"), "c#0": doc("c", links=["a"])}
    engine = CountingEngine([("a#0", 9.0), ("b#0", 7.0), ("c#0", 3.0)], [], sources)
    graph = GraphSettings(enabled=True, mode="lift", keep_top=1, seeds=2, rescore_weight=1.0)
    short = run(searcher(engine, fusion="rrf", graph=graph), top_n=1)
    assert [hit.id for hit in short.results] == ["a#0"] and engine.link_reads == 0
    # RRF(60) x 2 lists: a 1/61, b 1/62, c 1/63; c lifted by a: 1/63 + 1/61 > 1/62, and b is not kept.
    longer = run(searcher(engine, fusion="rrf", graph=graph), top_n=3)
    assert [hit.id for hit in longer.results] == ["a#0", "c#0", "b#0"] and engine.link_reads == 1


class CountingEngine(MemoryEngine):
    link_reads = 0

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "ids" in body.get("query", {}):
            self.link_reads += 1
        return await super().search(index, body)


def test_lift_explains_how_far_results_below_the_kept_ones_moved_down() -> None:
    """Explain's figures add up to each final score, in [0, 1], also when lifting moves everything below the kept
    ones down. Computed by hand: RRF(60) over one list gives a 1/61, b 1/62, c 1/63, e 1/64, d 1/65; keep_top 1,
    seeds 2, rescore_weight 1, every link counting 1."""
    sources = {item: doc(item[0], links=sorted(LIFT_LINKS.get(item[0], {}))) for item in LIFT_SCORES}
    engine = MemoryEngine([("a#0", 9.0), ("b#0", 8.0), ("c#0", 5.0), ("e#0", 3.0), ("d#0", 2.0)], [], sources)
    graph = GraphSettings(enabled=True, mode="lift", keep_top=1, seeds=2, rescore_weight=1.0)
    answer = run(searcher(engine, fusion="rrf", graph=graph), top_n=5, explain=True)
    a, b, c, e, d = (1 / rank for rank in (61, 62, 63, 64, 65))
    # c is tied to a, e to a and b: c gains a, e gains a + b, and would pass a; everything below a is scaled by
    # a / (e + a + b), e landing just under a. With one shift of (e + a + b) - a, d would end at d - e - b < 0.
    factor = a / (e + a + b)
    expected = {"a#0": 1.0, "e#0": 1.0, "c#0": (c + a) * factor / a, "b#0": b * factor / a, "d#0": d * factor / a}
    assert [hit.id for hit in answer.results] == ["a#0", "e#0", "c#0", "b#0", "d#0"]
    assert {hit.id: hit.score for hit in answer.results} == pytest.approx(expected)
    assert answer.results[1].score < 1.0 and all(0 < hit.score <= 1 for hit in answer.results)
    explained = {hit.id: hit.explain for hit in answer.results if hit.explain}
    assert explained["e#0"].link_lift == pytest.approx(a + b) and explained["c#0"].link_lift == pytest.approx(a)
    assert explained["d#0"].link_shift == pytest.approx(d * (1 - factor)) and explained["a#0"].link_shift is None
    for hit in answer.results:
        how = explained[hit.id]
        assert how.link_shift is None or how.link_shift > 0
        terms = how.fused_score * how.recency_multiplier + (how.link_lift or 0.0) - (how.link_shift or 0.0)
        assert terms / a == pytest.approx(hit.score), hit.id
