"""Several judged collections in one evaluation: a table of configurations by collections, and the mean.

A collection is a BEIR folder and a split, written ``FOLDER`` (the default split) or ``FOLDER@SPLIT``
(``../shared/data/beir/scifact@train``). Each collection is scored on its own (paired t-tests against
the baseline, as for one collection); the mean over collections weighs every collection alike, and its
difference from the baseline is tested with a stratified randomization test (``significance``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esbridge.errors import ConfigError
from esbridge.evaluation import metrics
from esbridge.evaluation.report import SIGNIFICANCE, ResultRow
from esbridge.evaluation.runner import ConfigurationRuns
from esbridge.evaluation.significance import randomization_p_value
from esbridge.ids import shown_path

PerQuery = dict[str, dict[str, dict[str, float]]]
"""configuration -> metric -> {query id: value}"""


@dataclass(frozen=True)
class Collection:
    folder: Path
    split: str
    label: str
    """What tables call it: the folder's name (as ``shown_path`` shows it), with ``@split`` unless the split is
    ``test``."""


def parse_collection(argument: str, default_split: str) -> Collection:
    """``FOLDER`` or ``FOLDER@SPLIT``; a folder whose own name holds ``@`` is taken whole when it exists."""
    path = Path(argument)
    folder, split = path, default_split
    if not path.is_dir() and "@" in argument:
        head, _, tail = argument.rpartition("@")
        folder, split = Path(head), tail
        if not split:
            raise ConfigError(f"{argument!r}: nothing after '@'; write FOLDER@SPLIT, e.g. scifact@train")
        if not head:
            raise ConfigError(f"{argument!r}: no folder before '@'; write FOLDER@SPLIT, e.g. scifact@train")
    if not folder.is_dir():
        raise ConfigError(f"dataset folder not found: {shown_path(folder)}")
    name = shown_path(folder.resolve().name)
    return Collection(folder, split, name if split == "test" else f"{name}@{split}")


_NOT_IN_INDEX_NAMES = re.compile(r"[^a-z0-9._-]+")


def default_index(folder: Path) -> str:
    """The index a dataset folder is evaluated in unless ``--index`` names one: ``eval-<folder name>``, lowercase,
    each run of characters an index name cannot hold (a space, a non-ASCII letter) written ``-``."""
    return "eval-" + _NOT_IN_INDEX_NAMES.sub("-", folder.resolve().name.lower())


def refuse_clashes(chosen: Sequence[Collection]) -> None:
    """Refuse a collection given twice, and different folders that would share an ``eval-<folder>`` index
    (one index holds one folder's corpus: the second ingest replaces the first's, and with ``--reuse``
    both would be scored on whichever it holds)."""
    seen: dict[tuple[Path, str], Collection] = {}
    indices: dict[str, Collection] = {}
    for collection in chosen:
        folder = collection.folder.resolve()
        if (folder, collection.split) in seen:
            shown = f"{shown_path(folder)} split {shown_path(collection.split)}"
            raise ConfigError(f"{shown} is given twice; name each collection once")
        seen[(folder, collection.split)] = collection
        index = default_index(folder)
        first = indices.setdefault(index, collection)
        if first.folder.resolve() != folder:
            raise ConfigError(
                f"{shown_path(first.folder)} and {shown_path(collection.folder)} would share index {index}; rename "
                "one folder, or evaluate them one at a time with --index"
            )


def per_query(judgements: Mapping[str, Mapping[str, int]], outcomes: Sequence[ConfigurationRuns]) -> PerQuery:
    """Each metric of each configuration that answered, per judged query (ranking metrics from ``top``,
    Recall@100 from ``deep``)."""
    judged = metrics.qrels(judgements)
    values: PerQuery = {}
    for outcome in outcomes:
        if outcome.unavailable:
            continue
        name = outcome.configuration.name
        by_metric = {metric: metrics.per_query(judged, outcome.top, metric) for metric in metrics.RANKING_METRICS}
        if outcome.deep:
            by_metric.update(
                {metric: metrics.per_query(judged, outcome.deep, metric) for metric in metrics.DEPTH_METRICS}
            )
        values[name] = by_metric
    return values


@dataclass
class CollectionResult:
    """One collection's rows and per-query values, and what its run reports (engine, index, timings)."""

    collection: Collection
    rows: list[ResultRow]
    values: PerQuery
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MeanRow:
    """A configuration's mean over the collections it answered on all of, with randomization p-values."""

    name: str
    scores: dict[str, float]
    p_values: dict[str, float]
    missing: tuple[str, ...] = ()
    """Collections it did not answer on (then it has no mean)."""


def mean_rows(results: Sequence[CollectionResult], baseline: str | None, *, trials: int = 10_000) -> list[MeanRow]:
    """Per configuration (in the first collection's order): the mean of each metric over collections and,
    against ``baseline``, the stratified randomization test's p-value of the difference."""
    names = list(dict.fromkeys(row.name for result in results for row in result.rows))
    rows = []
    for name in names:
        missing = tuple(result.collection.label for result in results if name not in result.values)
        if missing:
            rows.append(MeanRow(name, {}, {}, missing))
            continue
        shared = [m for m in metrics.METRICS if all(m in result.values[name] for result in results)]
        scores = {m: sum(_mean(result.values[name][m]) for result in results) / len(results) for m in shared}
        p_values = {}
        if baseline and baseline != name and all(baseline in result.values for result in results):
            for m in shared:
                if all(m in result.values[baseline] for result in results):
                    differences = [
                        _differences(result.values[name][m], result.values[baseline][m]) for result in results
                    ]
                    p_values[m] = randomization_p_value(differences, trials=trials)
        rows.append(MeanRow(name, scores, p_values))
    return rows


def _mean(values: Mapping[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def _differences(values: Mapping[str, float], baseline: Mapping[str, float]) -> list[float]:
    return [values[query] - baseline[query] for query in baseline if query in values]


def matrix_table(
    results: Sequence[CollectionResult], means: Sequence[MeanRow], metric: str, baseline: str | None
) -> str:
    """Configurations down, collections and their mean across, for one metric; ``*`` marks p < 0.05 against
    the baseline (per collection: paired t-test; the mean: stratified randomization test)."""
    labels = [result.collection.label for result in results]
    width = max([len("configuration"), *(len(row.name) for row in means)])
    cell = max(10, *(len(label) for label in labels))
    lines = [f"{metric}", f"{'configuration':<{width}}  " + "  ".join(f"{c:>{cell}}" for c in [*labels, "mean"])]
    rows_by_collection = [{row.name: row for row in result.rows} for result in results]
    for mean in means:
        cells = []
        for rows in rows_by_collection:
            row = rows.get(mean.name)
            value = None if row is None or row.unavailable else row.scores.get(metric)
            cells.append(_cell(value, row.p_values.get(metric) if row else None, cell))
        cells.append(_cell(mean.scores.get(metric), mean.p_values.get(metric), cell))
        lines.append(f"{mean.name:<{width}}  " + "  ".join(cells))
    tested = any(row.p_values for result in results for row in result.rows) or any(mean.p_values for mean in means)
    if baseline and tested:  # a baseline that ran nowhere was tested against nothing
        lines.append(
            f"* differs from {baseline} with p < {SIGNIFICANCE} (per collection: paired t-test over queries; "
            "mean: stratified randomization test)"
        )
    return "\n".join(lines)


def unavailable_lines(results: Sequence[CollectionResult]) -> list[str]:
    """Why a configuration has no figures: ``native: not run on med, cisi: <reason>``, one line per reason."""
    where: dict[tuple[str, str], list[str]] = {}
    for result in results:
        for row in result.rows:
            if row.unavailable:
                where.setdefault((row.name, row.unavailable), []).append(result.collection.label)
    return [f"{name}: not run on {', '.join(labels)}: {reason}" for (name, reason), labels in where.items()]


def _cell(value: float | None, p_value: float | None, width: int) -> str:
    if value is None:
        return f"{'-':>{width}}"
    mark = "*" if p_value is not None and p_value < SIGNIFICANCE else " "
    return f"{value:>{width - 1}.4f}{mark}"


def mean_json(row: MeanRow) -> dict[str, Any]:
    data: dict[str, Any] = {"name": row.name}
    data.update({metric: round(value, 4) for metric, value in row.scores.items()})
    if row.p_values:
        data["p_vs_baseline"] = {metric: round(value, 6) for metric, value in row.p_values.items()}
    if row.missing:
        data["missing"] = list(row.missing)
    return data
