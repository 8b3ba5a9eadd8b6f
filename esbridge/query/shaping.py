"""Result shaping: the last stage, from the final score map to the list a user sees.

``shape`` runs, in this order: rank (score descending; equal scores keep their input order), collapse
to the best chunk per document (optional), normalize so the best is exactly 1.0, drop what is below
``floor`` (optional), pick ``top_n`` with soft caps per ``entity_type`` (optional). The result holds
unique ids, at most ``top_n`` of them, with scores in [0, 1], non-increasing, the first exactly 1.0.
``shaped`` also gives the ``Scale`` that normalized them, which explanations show.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

Ranked = list[tuple[str, float]]

DEFAULT_TYPE_SHARE = 0.6


@dataclass(frozen=True)
class ShapeOptions:
    top_n: int = 10
    collapse: bool = False
    """Keep only the best-scoring item of each document."""
    floor: float = 0.0
    """Drop results whose normalized score is below this fraction of the best; 0 keeps all."""
    cap_types: bool = False
    """Soft cap: one ``entity_type`` takes at most ``ceil(type_share * top_n)`` slots while others have candidates."""
    type_share: float = DEFAULT_TYPE_SHARE

    def __post_init__(self) -> None:
        if self.top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {self.top_n}")
        if not 0 <= self.floor <= 1:
            raise ValueError(f"floor must be in [0, 1], got {self.floor}")
        if not 0 < self.type_share <= 1:
            raise ValueError(f"type_share must be in (0, 1], got {self.type_share}")


@dataclass(frozen=True)
class Scale:
    """How normalizing maps a score onto [0, 1]: ``(score - low) / (high - low)``, at least 0; every score
    is 1.0 when ``low == high``. ``high`` is the best score; ``low`` is 0 when the best is positive, else the
    worst."""

    low: float
    high: float

    def __call__(self, score: float) -> float:
        if self.high == self.low:
            return 1.0
        return max((score - self.low) / (self.high - self.low), 0.0)


@dataclass(frozen=True)
class Shaped:
    scores: dict[str, float]
    """The final results, best first, with their final scores."""
    scale: Scale | None
    """What normalized them; None when there were none."""


def shape(
    scores: Mapping[str, float],
    options: ShapeOptions | None = None,
    *,
    doc_of: Mapping[str, str] | None = None,
    entity_type_of: Mapping[str, str | None] | None = None,
) -> dict[str, float]:
    """The final results, best first, with their final scores.

    ``doc_of`` is needed to collapse, ``entity_type_of`` to cap types (items missing from it are untyped).
    """
    return shaped(scores, options, doc_of=doc_of, entity_type_of=entity_type_of).scores


def shaped(
    scores: Mapping[str, float],
    options: ShapeOptions | None = None,
    *,
    doc_of: Mapping[str, str] | None = None,
    entity_type_of: Mapping[str, str | None] | None = None,
) -> Shaped:
    """The final results, as ``shape`` gives them, and the ``Scale`` that normalized them."""
    options = options or ShapeOptions()
    results = ranked(scores)
    if options.collapse:
        if doc_of is None:
            raise ValueError("collapsing to one result per document needs doc_of")
        results = collapse(results, doc_of)
    scale = scale_of(results)
    results = above_floor(normalize(results), options.floor)
    if options.cap_types:
        if entity_type_of is None:
            raise ValueError("capping entity types needs entity_type_of")
        slots = type_slots(options.top_n, options.type_share)
        return Shaped(dict(select(results, options.top_n, entity_type_of, slots)), scale)
    return Shaped(dict(results[: options.top_n]), scale)


def ranked(scores: Mapping[str, float]) -> Ranked:
    """Best first; equal scores keep their input order (fusion hands them over sorted by id)."""
    for item, score in scores.items():
        if not math.isfinite(score):
            raise ValueError(f"score of {item!r} is not a finite number: {score}")
    return sorted(scores.items(), key=lambda entry: -entry[1])


def collapse(results: Ranked, doc_of: Mapping[str, str]) -> Ranked:
    """The first (best) item of each document, in order."""
    seen: set[str] = set()
    kept: Ranked = []
    for item, score in results:
        doc_id = doc_of.get(item)
        if doc_id is None:
            raise ValueError(f"no doc_id given for item {item!r}")
        if doc_id not in seen:
            seen.add(doc_id)
            kept.append((item, score))
    return kept


def normalize(results: Ranked) -> Ranked:
    """Scores of a best-first list mapped to [0, 1], the first to exactly 1.0, order kept.

    With a positive best score: ``score / best``, negative scores become 0. With no positive score
    the list is scaled between its worst (0) and best (1): ``(score - worst) / (best - worst)``, all 1.0
    when they are equal. Without positive evidence the order is still the only information there is.
    """
    scale = scale_of(results)
    return [] if scale is None else [(item, scale(score)) for item, score in results]


def scale_of(results: Ranked) -> Scale | None:
    """The ``Scale`` that normalizes a best-first list (see ``normalize``); None for an empty one."""
    if not results:
        return None
    best = results[0][1]
    return Scale(0.0, best) if best > 0 else Scale(results[-1][1], best)


def above_floor(results: Ranked, floor: float) -> Ranked:
    """Normalized results at or above ``floor`` (a fraction of the best, which is 1.0)."""
    return [(item, score) for item, score in results if score >= floor]


def type_slots(top_n: int, share: float) -> int:
    """The most slots one entity type may take while other candidates remain: ``ceil(share * top_n)``."""
    # Rounded first: 0.07 * 100 is 7.000000000000001 in binary floating point, and must give 7.
    return max(1, math.ceil(round(share * top_n, 9)))


def select(results: Ranked, top_n: int, entity_type_of: Mapping[str, str | None], slots: int) -> Ranked:
    """The first ``top_n`` results, each type taking at most ``slots`` of them while other candidates remain.

    An item whose type is full is passed over; only when the candidates run out do the passed-over
    items fill the free slots, best first. Untyped items are never capped. Order is kept.
    """
    taken: list[int] = []
    passed_over: list[int] = []
    used: Counter[str] = Counter()
    for index, (item, _) in enumerate(results):
        if len(taken) == top_n:
            break
        kind = entity_type_of.get(item) or None
        if kind is not None and used[kind] >= slots:
            passed_over.append(index)
            continue
        taken.append(index)
        if kind is not None:
            used[kind] += 1
    backfill = passed_over[: top_n - len(taken)]
    return [results[index] for index in sorted(taken + backfill)]
