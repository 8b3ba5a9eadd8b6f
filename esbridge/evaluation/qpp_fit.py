"""Fitting the ``qpp`` fusion model on judged queries (ridge regression).

For each training query we know its predictors (``esbridge.query.fusion.qpp.predictors``) and the
nDCG@10 that min-max linear fusion reached at each candidate kNN share. One ridge regression per share
(Hoerl & Kennard, "Ridge regression", Technometrics 12(1), 1970) predicts that nDCG from the
standardised predictors; the intercept is not penalised. ``cross_validated`` estimates, without
looking at a query's own judgements, what choosing by the model would score, which is how ``esbridge
tune`` decides whether the model is worth using.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from esbridge.errors import ConfigError
from esbridge.query.fusion.qpp import PREDICTORS, QppModel

DEFAULT_RIDGE = 10.0
MIN_QUERIES = 50
"""Fewer judged queries than this fit noise; ``fit`` refuses them."""


def fit(
    predictors: Sequence[Sequence[float]],
    gains: Sequence[Sequence[float]],
    shares: Sequence[float],
    *,
    ridge: float = DEFAULT_RIDGE,
    source: str = "",
    embedding_model: str = "",
) -> QppModel:
    """The ridge model over ``predictors`` (one row per query) and ``gains`` (one nDCG per share, per query);
    ``embedding_model`` names the model whose kNN scores the predictors were read from."""
    x, y = _arrays(predictors, gains, shares)
    return _fitted(x, y, shares, ridge, source, embedding_model)


def _fitted(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    shares: Sequence[float],
    ridge: float,
    source: str = "",
    embedding_model: str = "",
) -> QppModel:
    if ridge < 0:
        raise ConfigError(f"ridge must be >= 0, got {ridge}")
    center = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant predictor gets coefficient 0 either way
    z = (x - center) / scale
    design = np.column_stack([np.ones(len(z)), z])
    penalty = ridge * np.eye(design.shape[1])
    penalty[0, 0] = 0.0
    solution = np.linalg.solve(design.T @ design + penalty, design.T @ y)
    return QppModel(
        tuple(float(share) for share in shares),
        tuple(float(value) for value in center),
        tuple(float(value) for value in scale),
        tuple(float(value) for value in solution[0]),
        tuple(tuple(float(value) for value in row) for row in solution[1:]),
        source,
        embedding_model,
    )


def chosen_gains(
    model: QppModel, predictors: Sequence[Sequence[float]], gains: Sequence[Sequence[float]]
) -> list[float]:
    """Each query's nDCG at the share the model picks for it (``QppModel.choose``)."""
    return [float(achieved[model.choose(row)[0]]) for row, achieved in zip(predictors, gains, strict=True)]


def cross_validated(
    predictors: Sequence[Sequence[float]],
    gains: Sequence[Sequence[float]],
    shares: Sequence[float],
    *,
    ridge: float = DEFAULT_RIDGE,
    folds: int = 5,
    repeats: int = 5,
    seed: int = 0,
) -> float:
    """Mean nDCG@10 of the model's choices on held-out queries: ``folds``-fold, averaged over ``repeats``
    random partitions (seeded, so the same data gives the same figure)."""
    x, y = _arrays(predictors, gains, shares)
    if folds < 2 or folds > len(x):
        raise ConfigError(f"folds must be between 2 and the number of queries ({len(x)}), got {folds}")
    generator = np.random.default_rng(seed)
    means = []
    for _ in range(repeats):
        order = generator.permutation(len(x))
        chosen = np.zeros(len(x))
        for held in np.array_split(order, folds):
            kept = np.setdiff1d(order, held)
            # A fold's training part may hold fewer than MIN_QUERIES; the minimum is the written model's.
            model = _fitted(x[kept], y[kept], shares, ridge)
            chosen[held] = chosen_gains(model, x[held].tolist(), y[held].tolist())
        means.append(float(chosen.mean()))
    return float(np.mean(means))


def _arrays(
    predictors: Sequence[Sequence[float]], gains: Sequence[Sequence[float]], shares: Sequence[float]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.asarray(predictors, dtype=float)
    y = np.asarray(gains, dtype=float)
    if x.ndim != 2 or x.shape[1] != len(PREDICTORS):
        raise ConfigError(f"predictors need one row of {len(PREDICTORS)} values per query, got shape {x.shape}")
    if y.shape != (len(x), len(shares)):
        raise ConfigError(f"gains need one value per share ({len(shares)}) for each of {len(x)} queries, got {y.shape}")
    if len(x) < MIN_QUERIES:
        raise ConfigError(f"fitting the qpp model needs at least {MIN_QUERIES} judged queries, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ConfigError("predictors and gains must be finite numbers")
    return x, y
