from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbridge.config.pipeline import RecencySettings
from esbridge.engines.embedded.dates import parse_date
from esbridge.query.engine_dates import parse_engine_date
from esbridge.query.recency import (
    HalfLife,
    RecencyRule,
    Tier,
    Tiers,
    age,
    apply_recency,
    aware,
    multiplier,
    parse_modified_at,
    read_dates,
    rule_from,
)

NOW = datetime(2024, 6, 30, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 1.2), (3, 1.2), (7, 1.2), (7.5, 1.1), (30, 1.1), (31, 1.0), (3650, 1.0)],
)
def test_default_tiers(days: float, expected: float) -> None:
    assert multiplier(days * DAY, Tiers()) == expected


def test_the_edge_of_a_tier_is_inside_it() -> None:
    assert multiplier(timedelta(days=7, microseconds=1), Tiers()) == 1.1


def test_tiers_are_sorted_by_age() -> None:
    rule = Tiers((Tier(timedelta(days=90), 1.05), Tier(timedelta(days=1), 1.5)))
    assert [tier.max_age.days for tier in rule.tiers] == [1, 90]
    assert [multiplier(days * DAY, rule) for days in (0, 1, 2, 90, 91)] == [1.5, 1.5, 1.05, 1.05, 1.0]
    assert multiplier(DAY, Tiers(())) == 1.0


@pytest.mark.parametrize(
    ("tiers", "message"),
    [
        ((Tier(timedelta(0), 1.2),), "positive"),
        ((Tier(DAY, 0.9),), ">= 1"),
        ((Tier(DAY, float("inf")),), ">= 1"),
        ((Tier(DAY, 1.1), Tier(2 * DAY, 1.2)), "must not grow"),
        ((Tier(DAY, 1.2), Tier(DAY, 1.1)), "two recency tiers"),
    ],
)
def test_tiers_are_validated(tiers: tuple[Tier, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Tiers(tiers)


@pytest.mark.parametrize(("days", "expected"), [(0, 1.2), (14, 1.1), (28, 1.05), (42, 1.025)])
def test_half_life(days: int, expected: float) -> None:
    assert multiplier(days * DAY, HalfLife(half_life=14 * DAY, boost=0.2)) == pytest.approx(expected)


def test_half_life_decays_to_one() -> None:
    assert multiplier(timedelta(days=999_999_999), HalfLife()) == 1.0
    assert multiplier(DAY, HalfLife(boost=0)) == 1.0


@pytest.mark.parametrize(
    ("half_life", "boost", "message"),
    [(timedelta(0), 0.2, "half_life"), (DAY, -0.1, "boost"), (DAY, float("nan"), "boost")],
)
def test_half_life_is_validated(half_life: timedelta, boost: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HalfLife(half_life, boost)


def test_age_near_the_ends_of_the_calendar() -> None:
    last = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))  # after 9999 in UTC
    assert age(last, NOW) == timedelta(0)
    assert age(datetime(1, 1, 1), NOW) > timedelta(days=700_000)


def test_age_takes_naive_times_as_utc_and_the_future_as_now() -> None:
    naive_now = datetime(2024, 6, 30, 12, 0)
    assert age(datetime(2024, 6, 23, 12, 0, tzinfo=timezone.utc), naive_now) == 7 * DAY
    assert age(datetime(2024, 6, 23, 12, 0), NOW) == 7 * DAY
    plus_two = timezone(timedelta(hours=2))
    assert age(datetime(2024, 6, 30, 13, 0, tzinfo=plus_two), NOW) == timedelta(hours=1)
    assert age(datetime(2025, 1, 1, tzinfo=timezone.utc), NOW) == timedelta(0)


def test_apply_recency_by_hand() -> None:
    scores = {"old": 1.1, "new": 1.0, "month": 0.5, "undated": 0.9, "unknown": 0.8}
    modified_at = {
        "old": NOW - 40 * DAY,
        "new": NOW - DAY,
        "month": NOW - 20 * DAY,
        "undated": None,
    }
    boosted = apply_recency(scores, modified_at, NOW)
    assert list(boosted.scores) == ["new", "old", "undated", "unknown", "month"]
    assert boosted.scores == pytest.approx({"new": 1.2, "old": 1.1, "undated": 0.9, "unknown": 0.8, "month": 0.55})
    assert boosted.multipliers == {"new": 1.2, "old": 1.0, "undated": 1.0, "unknown": 1.0, "month": 1.1}


def test_apply_recency_with_a_half_life_and_a_future_date() -> None:
    boosted = apply_recency({"a": 1.0, "b": 1.0}, {"a": NOW + DAY, "b": NOW - 14 * DAY}, NOW, HalfLife())
    assert boosted.scores == pytest.approx({"a": 1.2, "b": 1.1})


def test_scores_that_are_not_positive_are_not_boosted() -> None:
    boosted = apply_recency({"zero": 0.0, "negative": -0.5}, {"zero": NOW, "negative": NOW}, NOW)
    assert boosted.scores == {"zero": 0.0, "negative": -0.5}
    assert boosted.multipliers == {"zero": 1.0, "negative": 1.0}


def test_equal_scores_are_ordered_by_id() -> None:
    assert list(apply_recency({"b": 1.0, "a": 1.0}, {}, NOW).scores) == ["a", "b"]


def test_non_finite_scores_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        apply_recency({"a": float("inf")}, {}, NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-06-01T10:00:00Z", datetime(2024, 6, 1, 10, tzinfo=timezone.utc)),
        ("2024-06-01T10:00:00+02:00", datetime(2024, 6, 1, 8, tzinfo=timezone.utc)),
        ("2024-06-01", datetime(2024, 6, 1)),
        (NOW, NOW),
        (None, None),
        ("", None),
        # Epoch milliseconds, which the engines' default date format takes (an attached index may hold them).
        (1717236000000, datetime(2024, 6, 1, 10, tzinfo=timezone.utc)),
        # The same format takes them as a string of digits too, and a date reduced to its year or month (the
        # engines' range filters read all three); four digits are a year, as the engines try dates first.
        ("1717236000000", datetime(2024, 6, 1, 10, tzinfo=timezone.utc)),
        ("2024", datetime(2024, 1, 1)),
        ("2024-06", datetime(2024, 6, 1)),
        # What both engines take besides (checked on OpenSearch 3 and Elasticsearch 9 by the integration test
        # tests/integration/test_date_formats.py): fractional epoch milliseconds, rounded down as they store them,
        (1717236000000.5, datetime(2024, 6, 1, 10, tzinfo=timezone.utc)),
        ("1717236000000.9", datetime(2024, 6, 1, 10, tzinfo=timezone.utc)),
        ("-1.5", datetime(1969, 12, 31, 23, 59, 59, 998000, tzinfo=timezone.utc)),
        # a JSON number of four digits as a year (its text is one), an hour alone, a comma before the fraction,
        (2024, datetime(2024, 1, 1)),
        ("2024-06-01T10", datetime(2024, 6, 1, 10)),
        ("2024-06-01T", datetime(2024, 6, 1)),
        ("2024-06-01T10:00:00,5+0200", datetime(2024, 6, 1, 8, 0, 0, 500000, tzinfo=timezone.utc)),
        ("2024-06-01T10:00:00.123456789Z", datetime(2024, 6, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2024-06-01T10:00:00Europe/Paris", datetime(2024, 6, 1, 8, tzinfo=timezone.utc)),
        # eight digits as epoch milliseconds (a date needs its dashes), and years Python's datetime cannot hold.
        ("20240601", datetime(1970, 1, 1, 5, 37, 20, 601000, tzinfo=timezone.utc)),
        ("0000", datetime.min),
        ("-1000", datetime.min),
        ("1000000000000000", datetime.max.replace(tzinfo=timezone.utc)),
        # the largest Java long, which both engines take as epoch milliseconds, and an offset after UT.
        ("9223372036854775807", datetime.max.replace(tzinfo=timezone.utc)),
        ("2024-06-01T10:00:00UT+01:00", datetime(2024, 6, 1, 9, tzinfo=timezone.utc)),
        # February 29th in the proleptic Gregorian leap years, before year 1 too (year 0, -0004, -0400).
        ("2000-02-29", datetime(2000, 2, 29)),
        *[(leap, datetime.min) for leap in ("0000-02-29", "-0004-02-29", "-0400-02-29")],
    ],
)
def test_parse_modified_at(value: object, expected: datetime | None) -> None:
    assert parse_modified_at(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        *["yesterday", "01/06/2024 10:00", True, ["2024-06-01"], "2024-13", "9" * 30, float("nan")],
        # ISO 8601 forms Python reads and the engines refuse: week and ordinal dates, basic format, a space for T,
        # a lower-case z, 24:00, a zone after a date alone, and spaces around a date or a number.
        *["2024-W05-3", "2024-W05", "2024-035", "20240601T100000", "2024-06-01 10:00:00", "2024-06-01T10:00:00z"],
        *["2024-06-01T24:00", "2024-06-01Z", " 2024-06-01", " 1717236000000 ", "1e12", "+1717236000000", "2024-02-30"],
        *["2024-06-01T10:00:00+19:00", "2024-06-01T10:00:00EST", 1e16],
        # February 29th of years that are not leap years: centuries not divisible by 400, before year 1 too.
        *["1900-02-29", "2023-02-29", "-0001-02-29", "-0100-02-29"],
    ],
)
def test_parse_modified_at_refuses_what_is_not_a_date(value: object) -> None:
    with pytest.raises(ValueError, match="ISO 8601 date or epoch milliseconds"):
        parse_modified_at(value)


# Properties.

ages = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=100_000))


@st.composite
def tier_rules(draw: st.DrawFn) -> Tiers:
    max_ages = draw(st.lists(st.integers(1, 10_000), max_size=5, unique=True))
    multipliers = draw(st.lists(st.floats(1.0, 10.0), min_size=len(max_ages), max_size=len(max_ages)))
    by_age = sorted(max_ages)
    return Tiers(
        tuple(
            Tier(timedelta(hours=hours), m) for hours, m in zip(by_age, sorted(multipliers, reverse=True), strict=True)
        )
    )


half_lives = st.builds(
    HalfLife,
    half_life=st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=10_000)),
    boost=st.floats(0.0, 10.0),
)
rules = st.one_of(tier_rules(), half_lives)


@given(rules, ages, ages)
def test_multiplier_is_at_least_one_and_never_grows_with_age(rule: RecencyRule, a: timedelta, b: timedelta) -> None:
    younger, older = sorted((a, b))
    assert multiplier(older, rule) >= 1.0
    assert multiplier(younger, rule) >= multiplier(older, rule)


@given(
    rules,
    st.dictionaries(st.text(max_size=3), st.floats(-10.0, 10.0), max_size=8),
    st.lists(st.datetimes(timezones=st.sampled_from([None, timezone.utc, timezone(timedelta(hours=-5))])), max_size=8),
)
def test_apply_recency_only_raises_positive_scores(
    rule: RecencyRule, scores: dict[str, float], moments: list[datetime]
) -> None:
    modified_at: dict[str, datetime | None] = dict(zip(scores, moments, strict=False))
    boosted = apply_recency(scores, modified_at, NOW, rule)
    assert set(boosted.scores) == set(scores)
    for item, score in scores.items():
        assert boosted.multipliers[item] >= 1.0
        assert boosted.scores[item] == score * boosted.multipliers[item]
        assert boosted.scores[item] >= score
    values = list(boosted.scores.values())
    assert values == sorted(values, reverse=True)


def test_the_rule_comes_from_the_recency_settings() -> None:
    assert rule_from(RecencySettings()) == Tiers()
    half_life = rule_from(RecencySettings(mode="half_life", half_life_days=10, boost=0.5))
    assert half_life == HalfLife(timedelta(days=10), 0.5)
    assert multiplier(timedelta(days=10), half_life) == 1.25


@pytest.mark.parametrize("first", ["esbridge.query.recency", "esbridge.config.pipeline", "esbridge.query.orchestrator"])
def test_the_recency_rule_and_its_settings_import_in_either_order(first: str) -> None:
    # The settings check their rule with esbridge.query.recency when they are read: no import cycle.
    done = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("value", "formats", "expected"),
    [
        # An attached index's own format: its parts in order, as the engines try them.
        ("1700000000", "epoch_second", datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)),
        (1700000000.5, "epoch_second", datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=timezone.utc)),
        ("2024", "epoch_second", datetime(1970, 1, 1, 0, 33, 44, tzinfo=timezone.utc)),
        ("2024", "strict_date_optional_time||epoch_second", datetime(2024, 1, 1)),
        ("1700000000", "date_optional_time||epoch_second", datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)),
        ("2024", "epoch_millis", datetime(1970, 1, 1, 0, 0, 2, 24000, tzinfo=timezone.utc)),
        ("2024-5-1T9:5", "date_optional_time", datetime(2024, 5, 1, 9, 5)),
        ("24-05-01", "date_optional_time", datetime(24, 5, 1)),
        (
            "2024-05-01T10:00:00Z",
            "dd/MM/yyyy||strict_date_optional_time",
            datetime(2024, 5, 1, 10, tzinfo=timezone.utc),
        ),
        (
            "Wed, 01 May 2024 10:00:00 +0200",
            "EEE, dd MMM yyyy HH:mm:ss Z",
            datetime(2024, 5, 1, 10, tzinfo=timezone(timedelta(hours=2))),
        ),
        ("2024-05-01", "yyyy-MM-dd['T'HH:mm]", datetime(2024, 5, 1)),
        ("2024-05-01T09:05", "yyyy-MM-dd['T'HH:mm]", datetime(2024, 5, 1, 9, 5)),
    ],
)
def test_parse_modified_at_in_the_fields_own_format(value: object, formats: str, expected: datetime) -> None:
    assert parse_modified_at(value, formats) == expected


def test_a_value_no_part_of_the_format_reads_is_named_with_the_format() -> None:
    with pytest.raises(ValueError, match="not a date in the format dd/MM/yyyy: '2024-05-01'"):
        parse_modified_at("2024-05-01", "dd/MM/yyyy")
    with pytest.raises(ValueError, match="format epoch_second"):
        parse_modified_at("2024-05-01", "epoch_second")
    dates, warning = read_dates({"a": {"modified_at": "01/05/2024"}}, "updated", "EEEE dd/MM/yyyy")
    assert dates == {} and warning == "recency left out 1 result(s) whose updated is not in its format " + (
        "EEEE dd/MM/yyyy (first: '01/05/2024')"
    )


@pytest.mark.parametrize(
    ("value", "formats", "expected"),
    [
        ("01/05/2024 10:00", "dd/MM/yyyy HH:mm", datetime(2024, 5, 1, 10)),
        ("2024/05/01", "yyyy/MM/dd||epoch_millis", datetime(2024, 5, 1)),
        ("1700000000000", "yyyy/MM/dd||epoch_millis", datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)),
        ("01/05/24", "dd/MM/yy", datetime(2024, 5, 1)),
        ("-0100-06-01", "uuuu-MM-dd", datetime.min),
        ("20240501T1000+0530", "yyyyMMdd'T'HHmmZ", datetime(2024, 5, 1, 10, tzinfo=timezone(timedelta(minutes=330)))),
        ("2024-05-01 10:00:00.250", "yyyy-MM-dd HH:mm:ss.SSS", datetime(2024, 5, 1, 10, 0, 0, 250000)),
        # Refused as the engines refuse them: widths, a year of era 0, a day the month lacks, an hour 24.
        ("1/5/2024 10:00", "dd/MM/yyyy HH:mm", None),
        ("0000/05/01", "yyyy/MM/dd", None),
        ("30/02/2024", "dd/MM/yyyy", None),
        ("01/05/2024 24:00", "dd/MM/yyyy HH:mm", None),
        ("2024-05-01T10:00:00.123+0200", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", None),
    ],
)
def test_a_custom_java_pattern_is_read_as_the_engines_read_it(
    value: object, formats: str, expected: datetime | None
) -> None:
    assert parse_engine_date(value, formats) == expected
    if expected is not None and expected != datetime.min:
        # The embedded engine reads the stored value with the same parser, to the same millisecond.
        assert parse_date(value, formats) == aware(expected).timestamp() * 1000
