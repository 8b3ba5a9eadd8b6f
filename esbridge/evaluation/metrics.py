"""Retrieval metrics and paired significance tests, computed by ranx (``pip install 'esbridge[eval]'``).

ranx's ``ndcg`` uses linear gains (Järvelin & Kekäläinen), as trec_eval's ``ndcg_cut`` and BEIR do, so
figures are comparable with published BEIR results. A query a run has no answer for scores 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esbridge.errors import DependencyMissing

if TYPE_CHECKING:
    from ranx import Qrels, Run

RANKING_METRICS = ("ndcg@10", "mrr@10")
DEPTH_METRICS = ("recall@100",)
METRICS = ("ndcg@10", "recall@100", "mrr@10")

# {query id: {doc id: score}}
Ranking = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Scored:
    """Mean metrics of one run, and the p-value of a paired test against the baseline per metric."""

    name: str
    scores: dict[str, float]
    p_values: dict[str, float] = field(default_factory=dict)


def require() -> None:
    """Raise ``DependencyMissing`` now rather than after a long run."""
    _ranx()


def _ranx() -> Any:
    try:
        import ranx
    except ImportError as exc:
        raise DependencyMissing("ranx", "eval", "evaluation metrics") from exc
    return ranx


@contextmanager
def _quiet_numba() -> Iterator[None]:
    # ranx's numba kernels cast uint64 to int64 when first compiled; numba warns about it, harmlessly
    # for any realistic number of documents, and the warning would fail runs that treat warnings as errors.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
        yield


def qrels(judgements: Mapping[str, Mapping[str, int]]) -> Qrels:
    return _ranx().Qrels({query: dict(docs) for query, docs in judgements.items() if docs})


# ranx cannot evaluate a run without any answer (max() of an empty sequence); such a run gets this
# unjudged document for every judged query instead, which scores 0 and keeps the paired test defined.
_NO_ANSWER = "\x00esbridge: no answer"


def _answered(judged: Qrels, ranking: Ranking) -> Ranking:
    if any(ranking.values()):
        return ranking
    queries: list[str] = list(judged.keys())
    return {query: {_NO_ANSWER: 0.0} for query in queries}


def run(name: str, ranking: Ranking) -> Run:
    return _ranx().Run({query: dict(docs) for query, docs in ranking.items() if docs}, name=name)


def mean_scores(judged: Qrels, ranking: Ranking, metrics: Sequence[str]) -> dict[str, float]:
    """Mean of each metric over the judged queries (a query the ranking lacks counts as 0)."""
    if not any(ranking.values()):
        return dict.fromkeys(metrics, 0.0)
    with _quiet_numba():
        result = _ranx().evaluate(judged, run("run", ranking), list(metrics), make_comparable=True)
    if isinstance(result, Mapping):
        return {metric: float(result[metric]) for metric in metrics}
    return {metrics[0]: float(result)}


def per_query(judged: Qrels, ranking: Ranking, metric: str) -> dict[str, float]:
    """One metric for each judged query, in ``judged``'s query order."""
    if not any(ranking.values()):
        return dict.fromkeys(judged.keys(), 0.0)
    with _quiet_numba():
        values = _ranx().evaluate(judged, run("run", ranking), metric, return_mean=False, make_comparable=True)
    return {query: float(value) for query, value in zip(judged.keys(), values, strict=True)}


def compare(
    judged: Qrels, rankings: Mapping[str, Ranking], metrics: Sequence[str], baseline: str | None
) -> dict[str, Scored]:
    """Mean metrics of every ranking and, with a baseline, a paired two-sided t-test of each against it
    (none on fewer than two queries, where the test is undefined)."""
    if baseline is None or baseline not in rankings or len(rankings) < 2 or len(judged) < 2:
        return {name: Scored(name, mean_scores(judged, ranking, metrics)) for name, ranking in rankings.items()}
    names = [baseline, *(name for name in rankings if name != baseline)]
    with _quiet_numba(), warnings.catch_warnings():
        # Identical per-query differences (e.g. a switch that changed nothing) make the t statistic 0/0
        # or x/0; scipy warns and returns NaN, which _p_value turns into the right limit below.
        warnings.filterwarnings("ignore", message="Precision loss occurred", category=RuntimeWarning)
        report = _ranx().compare(
            judged,
            [run(name, _answered(judged, rankings[name])) for name in names],
            list(metrics),
            stat_test="student",
            make_comparable=True,
            rounding_digits=6,
        )
    table = report.to_dict()
    scored = {}
    for name in names:
        entry = table[name]
        means = {m: float(entry["scores"][m]) for m in metrics}
        p_values = {}
        if name != baseline:
            base_means = table[baseline]["scores"]
            for m in metrics:
                p_values[m] = _p_value(float(entry["comparisons"][baseline][m]), means[m] - float(base_means[m]))
        scored[name] = Scored(name, means, p_values)
    return scored


def _p_value(p: float, mean_difference: float) -> float:
    """A NaN p-value comes from per-query differences that are all equal: all 0 (p = 1) or all the same x != 0."""
    if not math.isnan(p):
        return p
    return 1.0 if abs(mean_difference) < 1e-12 else 0.0
