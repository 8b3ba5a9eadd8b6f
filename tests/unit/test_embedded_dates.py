"""Dates as the embedded engine reads them: OpenSearch's default date format, and the span a bound names."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

import pytest

from esbridge.engines.embedded.dates import date_span, parse_date
from esbridge.engines.embedded.filters import Unsupported, date_span_of
from esbridge.engines.embedded.mapping import Field

DAY = 86_400_000
MAY_1 = 1_714_521_600_000  # 2024-05-01T00:00:00Z


@pytest.mark.parametrize(
    ("bound", "span"),
    [
        ("2024-05-01", (MAY_1, MAY_1 + DAY - 1)),
        ("2024-05", (MAY_1, MAY_1 + DAY - 1)),  # its first day: OpenSearch rounds up only the time
        ("2024", (1_704_067_200_000, 1_704_067_200_000 + DAY - 1)),
        ("2024-05-01T08", (MAY_1 + 8 * 3_600_000, MAY_1 + 9 * 3_600_000 - 1)),
        ("2024-05-01T00:00:00", (MAY_1, MAY_1 + 999)),
        ("2024-05-01T00:00:00.4", (MAY_1 + 400, MAY_1 + 400)),  # that instant: a cluster rounds no fraction up
        ("2024-05-01T00:00:00,4001Z", (MAY_1 + 400, MAY_1 + 400)),  # to the millisecond, as stored
        ("2024-05-01T02:00:00+02:00", (MAY_1, MAY_1 + 999)),
        ("2024-05-01T02:00:00+0200", (MAY_1, MAY_1 + 999)),
        ("2024-04-30T22:00:00-02", (MAY_1, MAY_1 + 999)),
        ("2024-05-01T01:00:30+01:00:30", (MAY_1, MAY_1 + 999)),  # an offset to the second, as both clusters read
        ("2024-04-30T23:59:29.5-00:00:30", (MAY_1 - 500, MAY_1 - 500)),
        ("2024-05-01T18:00:00+18:00:00", (MAY_1, MAY_1 + 999)),
        ("1714521600000", (MAY_1, MAY_1)),
        ("-300", (-300, -300)),
        ("0000-12-31", (-62135683200000, -62135596800001)),  # the day before year 1: year 0 is a leap year
        ("-0001-12-31", (-62167305600000, -62167219200001)),  # the day before year 0
        ("-1000", (-93724128000000, -93724041600001)),  # four digits after the sign are a year, as on a cluster
        (MAY_1 + 0.7, (MAY_1, MAY_1)),
        ("9999-12-31", (253_402_214_400_000, 253_402_300_799_999)),  # the last day there is
    ],
)
def test_a_bound_stands_for_the_span_it_names(bound: object, span: tuple[int, int]) -> None:
    assert date_span(bound) == span


MODIFIED = Field("modified_at", "date", ("modified_at",))


@pytest.mark.parametrize("bound", ["2024-13", "2024-05-01T25", "2024-5-1", "yesterday", "", True, 1e300, "9" * 20])
def test_what_is_no_date_is_refused_naming_the_field(bound: object) -> None:
    with pytest.raises(Unsupported, match=r"is not a valid date for field \[modified_at\]"):
        date_span_of(MODIFIED, bound)


@pytest.mark.parametrize(
    "bound",
    [
        *["2024-05-01T10:00:00Foo/Bar", "2024-05-01T10:00:00europe/paris", "2024-02-30", "2024-05-01T10:00+19:00"],
        *["2024-05-01T10:00:00+18:00:01", "2024-05-01T10:00:00+18:01", "2024-05-01T10:00:00+01:00:60"],
        "2024-05-01T10:00:00+010030",  # Elasticsearch takes it, OpenSearch 3.6 does not
    ],
)
def test_a_date_the_clusters_fail_to_parse_is_refused_in_their_words(bound: str) -> None:
    # Before, an unknown zone said "Unknown time-zone ID: Foo/Bar", February 30 "no such date", and offsets past
    # 18 hours by seconds or minutes were taken.
    words = f"'{bound}' is not a valid date for field [modified_at]: failed to parse date field [{bound}] with format "
    with pytest.raises(Unsupported, match=re.escape(f"{words}[strict_date_optional_time||epoch_millis]")):
        date_span_of(MODIFIED, bound)
    with pytest.raises(ValueError, match=r"failed to parse date field"):
        parse_date(bound)


@pytest.mark.parametrize("bound", ["now-1d", "2024-05-01||+1d"])
def test_date_math_is_refused_as_outside_the_subset(bound: str) -> None:
    with pytest.raises(Unsupported, match="date math"):
        date_span_of(MODIFIED, bound)


def test_stored_dates_keep_their_precision_and_read_epoch_millis_and_reduced_dates() -> None:
    assert parse_date("2024-05-01T00:00:00.123456Z") == pytest.approx(MAY_1 + 123.456)
    assert parse_date("1714521600000") == MAY_1
    assert parse_date(MAY_1) == MAY_1
    assert parse_date("2024-05") == MAY_1
    assert parse_date("2024") == 1_704_067_200_000


def test_a_date_the_engine_cannot_read_in_a_time_zone_is_refused_as_such() -> None:
    with pytest.raises(ValueError, match="a date outside the years 1 to 9999 cannot be read in a time zone"):
        date_span("-5000-01-01", zone=ZoneInfo("Europe/Paris"))
