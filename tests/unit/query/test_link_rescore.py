"""Re-scoring the direct results by their links (graph mode ``rescore``), by hand."""

from __future__ import annotations

import pytest

from esbridge.query.graph import GraphOptions
from esbridge.query.link_rescore import rescore

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
