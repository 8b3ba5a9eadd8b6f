"""Properties every built-in fusion method keeps, checked on generated runs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.query.fusion import get_fusion, rrf
from esbridge.query.types import FusionResult, Runs

SCORES = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
RUN = st.dictionaries(st.sampled_from("abcdefghij"), SCORES, max_size=8)
RUNS = st.dictionaries(st.sampled_from(["bm25", "knn", "sparse"]), RUN, max_size=3)
WEIGHT = st.floats(min_value=0.0, max_value=5.0)

METHODS: list[tuple[str, dict[str, Any]]] = [
    ("rrf", {}),
    ("rrf", {"k": 1}),
    ("linear", {}),
    ("linear", {"normalization": "z_score"}),
    ("linear", {"normalization": "l2"}),
    ("linear", {"min_max_floor": 0.001, "combination": "arithmetic_mean"}),
    ("dbsf", {}),
    ("dbsf", {"clip": False}),
    ("adaptive", {"query": "how do pumps fail"}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in params.items())}" for name, params in METHODS]


def fuse(method: tuple[str, dict[str, Any]], runs: Runs, weights: Mapping[str, float] | None = None) -> FusionResult:
    name, params = method
    return get_fusion(name)(runs, weights=weights, **params)


def ordered(result: FusionResult) -> list[tuple[str, float]]:
    return list(result.scores.items())


@pytest.mark.parametrize("method", METHODS, ids=IDS)
@settings(max_examples=150, deadline=None)
@given(runs=RUNS, data=st.data())
def test_fused_ids_are_the_union_sorted_best_first(
    method: tuple[str, dict[str, Any]], runs: dict[str, dict[str, float]], data: st.DataObject
) -> None:
    weights = {name: data.draw(WEIGHT) for name in runs}
    result = fuse(method, runs, weights)
    assert set(result.scores) == {doc_id for run in runs.values() for doc_id in run}
    pairs = ordered(result)
    for (id1, s1), (id2, s2) in itertools.pairwise(pairs):
        assert s1 > s2 or (s1 == s2 and id1 < id2)
    assert list(result.contributions) == list(result.scores)
    for doc_id, score in result.scores.items():
        assert set(result.contributions[doc_id]) <= set(runs)
        assert math.fsum(result.contributions[doc_id].values()) == score


@pytest.mark.parametrize("method", METHODS, ids=IDS)
@settings(max_examples=150, deadline=None)
@given(runs=RUNS, data=st.data())
def test_the_order_of_the_runs_does_not_matter(
    method: tuple[str, dict[str, Any]], runs: dict[str, dict[str, float]], data: st.DataObject
) -> None:
    weights = {name: data.draw(WEIGHT) for name in runs}
    shuffled = {name: runs[name] for name in data.draw(st.permutations(list(runs)))}
    assert ordered(fuse(method, shuffled, weights)) == ordered(fuse(method, runs, weights))


@pytest.mark.parametrize("method", METHODS, ids=IDS)
@settings(max_examples=150, deadline=None)
@given(runs=RUNS.filter(lambda runs: len(runs) >= 2), data=st.data())
def test_a_zero_weight_removes_a_retrievers_influence(
    method: tuple[str, dict[str, Any]], runs: dict[str, dict[str, float]], data: st.DataObject
) -> None:
    muted = data.draw(st.sampled_from(sorted(runs)))
    others = {name: run for name, run in runs.items() if name != muted}
    weights = {name: data.draw(WEIGHT) for name in others}
    with_muted = fuse(method, runs, weights | {muted: 0.0})
    without = fuse(method, others, weights)
    assert [d for d in with_muted.scores if d in without.scores] == list(without.scores)
    for doc_id, score in with_muted.scores.items():
        assert score == without.scores.get(doc_id, 0.0)


@settings(max_examples=200, deadline=None)
@given(run=RUN, k=st.integers(min_value=1, max_value=1000))
def test_rrf_of_one_run_keeps_its_order(run: dict[str, float], k: int) -> None:
    assert list(rrf({"bm25": run}, k=k).scores) == list(run)


@settings(max_examples=200, deadline=None)
@given(runs=RUNS, data=st.data())
def test_min_max_linear_scores_lie_between_zero_and_the_weight_sum(
    runs: dict[str, dict[str, float]], data: st.DataObject
) -> None:
    weights = {name: data.draw(WEIGHT) for name in runs}
    result = fuse(("linear", {}), runs, weights)
    total = math.fsum(weights.values())
    assert all(0.0 <= score <= total * (1 + 1e-12) for score in result.scores.values())
