"""Recency: recently modified documents get their fused score multiplied by a factor >= 1.

Two rules, both giving a multiplier that is >= 1, never grows with age, and is 1.0 for old documents:

- ``Tiers``: the multiplier of the first tier whose ``max_age`` the age does not exceed, else 1.0.
  Default: up to 7 days x1.2, up to 30 days x1.1.
- ``HalfLife``: ``1 + boost * 0.5 ** (age / half_life)``: ``1 + boost`` when just modified, half the
  extra after each half-life.

Age is ``now - modified_at``. Naive datetimes (either one) are taken as UTC; a ``modified_at`` in the
future counts as age 0. Items without ``modified_at`` get x1.0, and so do scores <= 0: multiplying them
would push a recent item down, not up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import TYPE_CHECKING

from esbridge.query.engine_dates import parse_engine_date

if TYPE_CHECKING:  # the settings check their rule with this module when they are read
    from esbridge.config.fields import FieldMap
    from esbridge.config.pipeline import RecencySettings


@dataclass(frozen=True)
class Tier:
    max_age: timedelta
    multiplier: float


DEFAULT_TIERS = (Tier(timedelta(days=7), 1.2), Tier(timedelta(days=30), 1.1))


@dataclass(frozen=True)
class Tiers:
    """Step multipliers by age; the tiers are kept sorted by ``max_age`` (an age equal to it is inside)."""

    tiers: tuple[Tier, ...] = DEFAULT_TIERS

    def __post_init__(self) -> None:
        tiers = tuple(sorted(self.tiers, key=lambda tier: tier.max_age))
        for tier in tiers:
            if tier.max_age <= timedelta(0):
                raise ValueError(f"recency tier max_age must be positive, got {tier.max_age}")
            if not (math.isfinite(tier.multiplier) and tier.multiplier >= 1):
                raise ValueError(f"recency tier multiplier must be a finite number >= 1, got {tier.multiplier}")
        for younger, older in pairwise(tiers):
            if younger.max_age == older.max_age:
                raise ValueError(f"two recency tiers have max_age {older.max_age}")
            if older.multiplier > younger.multiplier:
                raise ValueError(
                    f"recency multipliers must not grow with age: x{older.multiplier} up to {older.max_age} "
                    f"after x{younger.multiplier} up to {younger.max_age}"
                )
        object.__setattr__(self, "tiers", tiers)


@dataclass(frozen=True)
class HalfLife:
    """Exponential decay of the extra weight: ``1 + boost * 0.5 ** (age / half_life)``."""

    half_life: timedelta = timedelta(days=14)
    boost: float = 0.2

    def __post_init__(self) -> None:
        if self.half_life <= timedelta(0):
            raise ValueError(f"recency half_life must be positive, got {self.half_life}")
        if not (math.isfinite(self.boost) and self.boost >= 0):
            raise ValueError(f"recency boost must be a finite number >= 0, got {self.boost}")


RecencyRule = Tiers | HalfLife


@dataclass(frozen=True)
class RecencyBoost:
    """New scores (best first, ties by id) and the multiplier applied to each item (1.0 when none)."""

    scores: dict[str, float]
    multipliers: dict[str, float]


def aware(moment: datetime) -> datetime:
    """``moment`` with a timezone: a naive one is taken to be UTC, an aware one is kept as it is."""
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment


def parse_modified_at(value: object, formats: str | None = None) -> datetime | None:
    """A ``modified_at`` from an engine's ``_source``, read as the engines read their default date format,
    ``strict_date_optional_time||epoch_millis`` (``esbridge.query.engine_dates``: ISO 8601 dates and times, a
    date reduced to its year or month as its first day, epoch milliseconds as a number or its text), or the
    field's own ``formats`` (an attached index's ``date_format``), or a datetime; None when absent.
    ``ValueError`` for a value the engines refuse, or that no part of ``formats`` esbridge knows reads."""
    if value is None or value == "":
        return None
    moment = parse_engine_date(value, formats)
    if moment is None:
        if formats:
            raise ValueError(f"modified_at is not a date in the format {formats}: {value!r}")
        raise ValueError(f"modified_at is not an ISO 8601 date or epoch milliseconds: {value!r}")
    return moment


def read_dates(
    sources: Mapping[str, Mapping[str, object]], field: str, formats: str | None = None
) -> tuple[dict[str, datetime | None], str | None]:
    """Each result's ``modified_at``, by item, and a warning naming those left out: an attached index's date
    ``field`` may hold another format than the ``formats`` esbridge was told of (``FieldMap.date_format``) or
    reads (ISO 8601 and epoch milliseconds by default)."""
    modified: dict[str, datetime | None] = {}
    unread: list[object] = []
    for item, source in sources.items():
        if stamp := source.get("modified_at"):
            try:
                modified[item] = parse_modified_at(stamp, formats)
            except ValueError:
                unread.append(stamp)
    if not unread:
        return modified, None
    kind = f"is not in its format {formats}" if formats else "is neither ISO 8601 nor epoch milliseconds"
    return modified, f"recency left out {len(unread)} result(s) whose {field} {kind} (first: {unread[0]!r})"


def age(modified_at: datetime, now: datetime) -> timedelta:
    """How long before ``now`` the item was modified; never negative."""
    return max(aware(now) - aware(modified_at), timedelta(0))


def multiplier(age: timedelta, rule: RecencyRule) -> float:
    if isinstance(rule, HalfLife):
        return 1.0 + rule.boost * math.pow(0.5, age / rule.half_life)
    return next((tier.multiplier for tier in rule.tiers if age <= tier.max_age), 1.0)


def apply_recency(
    scores: Mapping[str, float],
    modified_at: Mapping[str, datetime | None],
    now: datetime,
    rule: RecencyRule | None = None,
) -> RecencyBoost:
    """Multiply each positive score by the multiplier of its item's age at ``now``."""
    rule = rule or Tiers()
    boosted: dict[str, float] = {}
    applied: dict[str, float] = {}
    for item, score in scores.items():
        if not math.isfinite(score):
            raise ValueError(f"score of {item!r} is not a finite number: {score}")
        moment = modified_at.get(item)
        factor = multiplier(age(moment, now), rule) if moment is not None and score > 0 else 1.0
        boosted[item] = score * factor
        applied[item] = factor
    order = sorted(boosted, key=lambda item: (-boosted[item], item))
    return RecencyBoost({item: boosted[item] for item in order}, {item: applied[item] for item in order})


def recency_boost(
    scores: dict[str, float],
    sources: Mapping[str, Mapping[str, object]],
    settings: RecencySettings,
    fields: FieldMap,
    clock: Callable[[], datetime],
    *,
    asked: bool | None = None,
) -> tuple[dict[str, float], dict[str, float], str | None]:
    """The recency stage, when the request ``asked`` for it (None: when ``settings`` enable it): the scores
    boosted by the dates in ``fields.date`` (as they are when no result carries one), each item's multiplier, and
    a warning naming the dates that could not be read."""
    if not (asked if asked is not None else settings.enabled):
        return scores, {}, None
    modified, warning = read_dates(sources, str(fields.date), fields.date_format)
    if not modified:  # nothing to multiply when no result carries a date
        return scores, {}, warning
    boosted = apply_recency(scores, modified, clock(), rule_from(settings))
    return boosted.scores, dict(boosted.multipliers), warning


def rule_from(settings: RecencySettings) -> RecencyRule:
    """The rule ``[pipeline.recency]`` describes; a ``ValueError`` saying why when it describes none."""
    if settings.mode == "half_life":
        return HalfLife(_days(settings.half_life_days, "half_life_days"), settings.boost)
    return Tiers(tuple(Tier(_days(days, "tier max_age"), multiplier) for days, multiplier in settings.tiers))


def _days(days: float, what: str) -> timedelta:
    try:
        return timedelta(days=days)
    except (OverflowError, ValueError) as exc:  # inf, nan, or beyond timedelta's 999,999,999 days
        raise ValueError(f"recency {what} must be a finite number of days up to 999999999, got {days}") from exc
