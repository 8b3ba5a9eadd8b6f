"""Choosing fusion settings by evidence: a grid over method, normalisation, weights and RRF ``k``.

The grid: ``rrf`` with ``k`` in ``RRF_K``, ``linear`` with each of ``NORMALIZATIONS`` and ``dbsf``, each
at every BM25 weight share in ``SHARES`` (weights ``bm25 = share``, ``knn = 1 - share``; every method
here is invariant to scaling all weights, so the share is the only weight parameter). A point's
*neighbourhood* is itself and the points of the same family one step away in share or in ``k``; the
chosen point is the one with the best neighbourhood mean nDCG@10, which prefers a plateau to a spike.

Beside the grid, ``qpp`` fusion (weights chosen per query) is fitted on the same queries: min-max
linear fusion at each kNN share of ``QPP_SHARES`` (``qpp_share_configurations``) gives each query's
nDCG@10 per share, one more configuration (``qpp_probe``) reads each query's predictors, and
``fit_qpp`` fits the model. Its 5-fold
cross-validated nDCG@10 is compared with the best grid point's own nDCG@10 (measured on the very
queries it was chosen on, so the comparison favours the grid); qpp is written only if it is higher.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from esbridge.config.files import replace_text
from esbridge.config.pipeline import PipelineSettings
from esbridge.errors import ConfigError, DependencyMissing
from esbridge.evaluation import metrics
from esbridge.evaluation.methods import Configuration
from esbridge.evaluation.runner import ConfigurationRuns
from esbridge.ids import shown_path
from esbridge.query.fusion.qpp import PREDICTORS, QppModel
from esbridge.text import where_not_utf8

SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
RRF_K = (10, 20, 40, 60, 100)
NORMALIZATIONS = ("min_max", "z_score", "l2")
QPP_SHARES = (0.2, 0.35, 0.5, 0.65, 0.8)
"""kNN shares qpp chooses among, the shipped model's: fitted on other collections, these beat 0.4-0.6 by
0.006 nDCG@10 with the default embedding model (docs/fusion-qpp.md); the fit is written only when its
cross-validated figure beats the grid's best point, so a poor prediction is not kept."""
QPP_PROBE = "qpp (reading predictors)"


class PipelineChoice(Protocol):
    """What ``write_pipeline`` writes: a grid point or a fitted qpp model."""

    @property
    def fusion(self) -> str: ...

    @property
    def weights(self) -> dict[str, float]: ...

    @property
    def fusion_params(self) -> dict[str, Any]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class GridPoint:
    fusion: str
    share: float
    """BM25's share of the weights"""
    k: int | None = None
    normalization: str | None = None

    @property
    def family(self) -> str:
        if self.fusion == "rrf":
            return f"rrf k={self.k}"
        return f"linear {self.normalization}" if self.fusion == "linear" else self.fusion

    @property
    def weights(self) -> dict[str, float]:
        return {"bm25": round(self.share, 2), "knn": round(1 - self.share, 2)}

    @property
    def fusion_params(self) -> dict[str, Any]:
        if self.fusion == "rrf" and self.k is not None:
            return {"k": self.k}
        if self.fusion == "linear" and self.normalization is not None:
            return {"normalization": self.normalization}
        return {}

    def describe(self) -> str:
        params = " ".join(f"{key}={value}" for key, value in self.fusion_params.items())
        weights = ",".join(f"{name}={weight:g}" for name, weight in self.weights.items())
        return " ".join(part for part in (f"fusion={self.fusion}", params, f"weights {weights}") if part)

    def pipeline(self, base: PipelineSettings) -> PipelineSettings:
        return base.model_copy(
            update={"fusion": self.fusion, "weights": self.weights, "fusion_params": self.fusion_params}
        )


@dataclass(frozen=True)
class Candidate:
    point: GridPoint
    configuration: Configuration


@dataclass(frozen=True)
class Scored:
    point: GridPoint
    ndcg: float
    neighbourhood: float
    neighbours: int


@dataclass(frozen=True)
class TuningResult:
    scored: list[Scored]
    """best neighbourhood first"""

    @property
    def best(self) -> Scored:
        return self.scored[0]

    def curves(self) -> dict[str, list[tuple[float, float]]]:
        lines: dict[str, list[tuple[float, float]]] = {}
        for item in sorted(self.scored, key=lambda s: (s.point.family, s.point.share)):
            lines.setdefault(item.point.family, []).append((item.point.share, item.ndcg))
        return lines

    def table(self, top: int = 10) -> str:
        lines = [f"{'setting':<52} {'nDCG@10':>8} {'neighbourhood':>13}"]
        for item in self.scored[:top]:
            lines.append(f"{item.point.describe():<52} {item.ndcg:>8.4f} {item.neighbourhood:>13.4f}")
        lines.append("best of each family by its own nDCG@10:")
        for family, item in self.best_per_family().items():
            lines.append(f"  {family:<14} {item.point.describe():<50} {item.ndcg:.4f}")
        return "\n".join(lines)

    def best_per_family(self) -> dict[str, Scored]:
        best: dict[str, Scored] = {}
        for item in self.scored:
            known = best.get(item.point.family)
            if known is None or item.ndcg > known.ndcg:
                best[item.point.family] = item
        return dict(sorted(best.items(), key=lambda pair: -pair[1].ndcg))

    def as_json(self) -> dict[str, Any]:
        def entry(item: Scored) -> dict[str, Any]:
            return {
                "fusion": item.point.fusion,
                "weights": item.point.weights,
                "fusion_params": item.point.fusion_params,
                "ndcg@10": round(item.ndcg, 4),
                "neighbourhood_ndcg@10": round(item.neighbourhood, 4),
            }

        return {"best": entry(self.best), "grid": [entry(item) for item in self.scored]}


def grid(base: PipelineSettings | None = None) -> list[Candidate]:
    base = base or PipelineSettings()
    points = [GridPoint("rrf", share, k=k) for k in RRF_K for share in SHARES]
    points += [GridPoint("linear", share, normalization=norm) for norm in NORMALIZATIONS for share in SHARES]
    points += [GridPoint("dbsf", share) for share in SHARES]
    return [Candidate(point, Configuration(point.describe(), point.pipeline(base))) for point in points]


def _adjacent(a: GridPoint, b: GridPoint) -> bool:
    if a.fusion != b.fusion or a.normalization != b.normalization:
        return False
    share_step = abs(SHARES.index(a.share) - SHARES.index(b.share))
    k_step = abs(RRF_K.index(a.k) - RRF_K.index(b.k)) if a.k is not None and b.k is not None else 0
    return share_step + k_step == 1


def rank_points(ndcg: Mapping[GridPoint, float]) -> list[Scored]:
    """Every point with its neighbourhood mean, best neighbourhood first (then own score, then name)."""
    scored = []
    for point, value in ndcg.items():
        around = [other_value for other, other_value in ndcg.items() if _adjacent(point, other)]
        scored.append(Scored(point, value, (value + sum(around)) / (1 + len(around)), len(around)))
    return sorted(scored, key=lambda s: (-round(s.neighbourhood, 9), -s.ndcg, s.point.describe()))


def choose(
    candidates: Sequence[Candidate], judgements: Mapping[str, Mapping[str, int]], outcomes: Sequence[ConfigurationRuns]
) -> TuningResult:
    judged = metrics.qrels(judgements)
    by_name = {outcome.configuration.name: outcome for outcome in outcomes}
    ndcg = {
        candidate.point: metrics.mean_scores(judged, by_name[candidate.configuration.name].top, ["ndcg@10"])["ndcg@10"]
        for candidate in candidates
    }
    return TuningResult(rank_points(ndcg))


@dataclass(frozen=True)
class QppFit:
    """A qpp model fitted on the tuning queries, and how it did on queries it was not fitted on."""

    model: QppModel
    cross_validated: float
    """mean nDCG@10 of its choices on held-out queries (5-fold, 5 repeats), over every judged query: one
    without predictors scores what qpp's fallback (equal weights, share 0.5) reached for it"""
    queries: int

    @property
    def fusion(self) -> str:
        return "qpp"

    @property
    def weights(self) -> dict[str, float]:
        return {"bm25": 1.0, "knn": 1.0}

    @property
    def fusion_params(self) -> dict[str, Any]:
        return {"model": self.model.as_params()}

    def describe(self) -> str:
        shares = ",".join(f"{share:g}" for share in self.model.shares)
        return f"fusion=qpp (a model fitted on {self.queries} queries, kNN shares {shares})"


def qpp_probe(base: PipelineSettings) -> Configuration:
    """The configuration whose decisions carry each query's qpp predictors (any model reads the same ones)."""
    pipeline = base.model_copy(update={"fusion": "qpp", "weights": {"bm25": 1.0, "knn": 1.0}, "fusion_params": {}})
    return Configuration(QPP_PROBE, pipeline)


def qpp_share_configurations(base: PipelineSettings) -> list[Configuration]:
    """Min-max linear fusion at each kNN share of ``QPP_SHARES``: the per-query gains ``fit_qpp`` learns from."""
    return [
        Configuration(
            _share_name(share), GridPoint("linear", round(1 - share, 2), normalization="min_max").pipeline(base)
        )
        for share in QPP_SHARES
    ]


def _share_name(share: float) -> str:
    return f"qpp gains at kNN share {share:g}"


def fit_qpp(
    judgements: Mapping[str, Mapping[str, int]],
    outcomes: Sequence[ConfigurationRuns],
    source: str,
    *,
    embedding_model: str,
) -> QppFit | str:
    """The qpp model fitted on these outcomes (``qpp_share_configurations``' and ``qpp_probe``'s), or why it
    could not be;
    ``embedding_model``: the model that embedded the queries (the model records it)."""
    from esbridge.evaluation import qpp_fit

    by_name = {outcome.configuration.name: outcome for outcome in outcomes}
    probe = by_name.get(QPP_PROBE)
    if probe is None:
        return "no qpp probe configuration was run"
    missing = [_share_name(share) for share in QPP_SHARES if _share_name(share) not in by_name]
    if missing:
        return f"the qpp share configurations were not run ({', '.join(missing)})"
    judged = metrics.qrels(judgements)
    per_share = [metrics.per_query(judged, by_name[_share_name(share)].top, "ndcg@10") for share in QPP_SHARES]
    rows, gains, answered = [], [], set()
    for query, decision in probe.decisions.items():
        read = decision.predictors
        if query in per_share[0] and all(name in read for name in PREDICTORS):
            rows.append([float(read[name]) for name in PREDICTORS])
            gains.append([scores[query] for scores in per_share])
            answered.add(query)
    if len(rows) < qpp_fit.MIN_QUERIES:
        return f"{len(rows)} judged queries with predictors; fitting needs at least {qpp_fit.MIN_QUERIES}"
    model = qpp_fit.fit(
        rows,
        gains,
        QPP_SHARES,
        source=f"fitted by esbridge tune on {source} ({len(rows)} queries)",
        embedding_model=embedding_model,
    )
    # A query without predictors is fused by qpp's fallback, linear at the configured equal weights, which
    # ranks as share 0.5 does; it counts there, so the figure covers the same queries as the grid's.
    fallback = [per_share[QPP_SHARES.index(0.5)][query] for query in per_share[0] if query not in answered]
    held_out = qpp_fit.cross_validated(rows, gains, QPP_SHARES)
    overall = (held_out * len(rows) + math.fsum(fallback)) / (len(rows) + len(fallback))
    return QppFit(model, overall, len(rows))


def write_pipeline(path: Path, point: PipelineChoice) -> None:
    """Set ``[pipeline]`` fusion, weights and fusion_params in the TOML file at ``path``, keeping all else.

    Weights and parameters are written as inline tables: a new ``[pipeline.weights]`` header would
    capture the top-level keys that follow ``pipeline.*`` dotted keys. The result is read back and
    compared with the original before anything is written, so no other setting can change.
    """
    replace_text(path, updated_settings(path, point))


def updated_settings(path: Path, point: PipelineChoice) -> str:
    """The text ``write_pipeline`` would write, or ``ConfigError`` saying why it cannot; writes nothing,
    so ``tune`` can find out before its grid runs."""
    try:
        import tomlkit
    except ImportError as exc:
        raise DependencyMissing("tomlkit", "eval", "writing tuned settings") from exc
    try:
        original = path.read_text(encoding="utf-8") if path.exists() else ""
        document = tomlkit.parse(original)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read config file {shown_path(path)}: {where_not_utf8(exc)}") from exc
    except (OSError, tomlkit.exceptions.ParseError) as exc:
        raise ConfigError(f"cannot read config file {shown_path(path)}: {exc}") from exc
    pipeline = document.get("pipeline")
    if pipeline is None:
        pipeline = tomlkit.table()
        document["pipeline"] = pipeline
    if not isinstance(pipeline, MutableMapping):
        raise ConfigError(
            f"cannot update {shown_path(path)}: its pipeline is not a table but {type(pipeline).__name__}"
        )
    tuned: dict[str, Any] = {"fusion": point.fusion, "weights": point.weights, "fusion_params": point.fusion_params}
    for key, value in tuned.items():
        if isinstance(value, Mapping):
            inline = tomlkit.inline_table()
            inline.update(value)
            value = inline
        pipeline[key] = value
    written = tomlkit.dumps(document)
    expected = tomlkit.parse(original).unwrap()
    expected.setdefault("pipeline", {}).update(
        {key: dict(v) if isinstance(v, Mapping) else v for key, v in tuned.items()}
    )
    if tomlkit.parse(written).unwrap() != expected:
        lines = "\n".join(f"{key} = {tomlkit.item(value).as_string()}" for key, value in tuned.items())
        raise ConfigError(
            f"cannot update {shown_path(path)} without changing its other settings; nothing was written. "
            f"Put these lines in its [pipeline] table by hand:\n{lines}"
        )
    return written
