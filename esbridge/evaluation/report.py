"""From configuration runs to result rows: metrics side by side, significance against a baseline, a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from esbridge.evaluation import metrics
from esbridge.evaluation.runner import ConfigurationRuns

SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class ResultRow:
    name: str
    scores: dict[str, float] = field(default_factory=dict)
    p_values: dict[str, float] = field(default_factory=dict)
    """metric -> p-value of a paired t-test against the baseline (absent for the baseline itself)"""
    unavailable: str | None = None
    warnings: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        data.update({metric: round(self.scores[metric], 4) for metric in metrics.METRICS if metric in self.scores})
        if self.p_values:
            data["p_vs_baseline"] = {metric: round(value, 6) for metric, value in self.p_values.items()}
        if self.unavailable:
            data["unavailable"] = self.unavailable
        if self.warnings:
            data["warnings"] = dict(self.warnings)
        return data


def score(
    judgements: Mapping[str, Mapping[str, int]], outcomes: Sequence[ConfigurationRuns], baseline: str | None = "bm25"
) -> list[ResultRow]:
    """One row per configuration, in the order given; ranking metrics from ``top``, Recall@100 from ``deep``."""
    judged = metrics.qrels(judgements)
    answered = [outcome for outcome in outcomes if not outcome.unavailable]
    names = [outcome.configuration.name for outcome in answered]
    base = baseline if baseline in names else None
    ranking = metrics.compare(judged, {o.configuration.name: o.top for o in answered}, metrics.RANKING_METRICS, base)
    with_depth = {o.configuration.name: o.deep for o in answered if o.deep}
    depth = metrics.compare(judged, with_depth, metrics.DEPTH_METRICS, base) if with_depth else {}
    rows = []
    for outcome in outcomes:
        name = outcome.configuration.name
        if outcome.unavailable:
            rows.append(ResultRow(name, unavailable=outcome.unavailable))
            continue
        parts = [ranking[name], *([depth[name]] if name in depth else [])]
        rows.append(
            ResultRow(
                name,
                scores={m: v for part in parts for m, v in part.scores.items()},
                p_values={m: v for part in parts for m, v in part.p_values.items()},
                warnings=dict(outcome.warnings),
            )
        )
    return rows


def baseline_missing(rows: Sequence[ResultRow], baseline: str | None) -> str | None:
    """Why nothing was tested against ``baseline`` when it did not run (e.g. native fusion on an engine
    without it); None when it ran."""
    for row in rows:
        if row.name == baseline and row.unavailable:
            return f"no significance against {baseline}: {baseline} did not run ({row.unavailable})"
    return None


def any_judged(judgements: Mapping[str, Mapping[str, int]], outcomes: Sequence[ConfigurationRuns]) -> bool:
    """Whether any configuration returned a document judged for its query (none: the index likely holds
    another dataset, and every score is 0)."""
    return any(
        doc in judgements.get(query, {})
        for outcome in outcomes
        for ranking in (outcome.top, outcome.deep)
        for query, docs in ranking.items()
        for doc in docs
    )


def table(rows: Sequence[ResultRow], baseline: str | None = "bm25") -> str:
    """A plain-text table; ``*`` marks a difference from the baseline with p < 0.05 (paired t-test)."""
    columns = [m for m in metrics.METRICS if any(m in row.scores for row in rows)]
    width = max([len("configuration"), *(len(row.name) for row in rows)])
    lines = [f"{'configuration':<{width}}  " + "  ".join(f"{m:>11}" for m in columns)]
    for row in rows:
        if row.unavailable:
            lines.append(f"{row.name:<{width}}  {row.unavailable}")
            continue
        cells = []
        for metric in columns:
            value = row.scores.get(metric)
            mark = "*" if row.p_values.get(metric, 1.0) < SIGNIFICANCE else " "
            cells.append(f"{'-':>10} " if value is None else f"{value:>10.4f}{mark}")
        lines.append(f"{row.name:<{width}}  " + "  ".join(cells))
    if baseline and any(row.p_values for row in rows):
        test = "paired two-sided t-test over queries"
        if any(p < SIGNIFICANCE for row in rows for p in row.p_values.values()):
            lines.append(f"* differs from {baseline} with p < {SIGNIFICANCE} ({test})")
        else:
            lines.append(f"no configuration differs from {baseline} with p < {SIGNIFICANCE} ({test})")
    return "\n".join(lines)
