"""A range's ``time_zone`` on the embedded engine: the zones the clusters take, read with ``zoneinfo`` across
daylight saving changes, and the ones they refuse, in their words (tests/integration/test_embedded_parity.py
compares the same ranges with the clusters)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.dates import date_span, parse_date
from esbridge.engines.embedded.time_zones import time_zone
from esbridge.errors import RequestRejected

HOUR = 3_600_000
MARCH_31 = 1_711_843_200_000  # 2024-03-31T00:00:00Z: Paris moves its clocks from 02:00 to 03:00
MAY_1 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
OCTOBER_27 = 1_729_987_200_000  # 2024-10-27T00:00:00Z: Paris moves its clocks from 03:00 back to 02:00


@pytest.mark.parametrize(
    ("bound", "zone", "span"),
    [
        ("2024-03-31", "Europe/Paris", (MARCH_31 - HOUR, MARCH_31 + 22 * HOUR - 1)),  # a day of 23 hours
        ("2024-10-27", "Europe/Paris", (OCTOBER_27 - 2 * HOUR, OCTOBER_27 + 23 * HOUR - 1)),  # of 25 hours
        ("2024-03-31T02:30:00", "Europe/Paris", (MARCH_31 + 90 * 60_000, MARCH_31 + 90 * 60_000 + 999)),  # skipped
        ("2024-10-27T02", "Europe/Paris", (OCTOBER_27, OCTOBER_27 + HOUR - 1)),  # repeated: the first, summer one
        ("2024-03-31", "America/New_York", (MARCH_31 + 4 * HOUR, MARCH_31 + 28 * HOUR - 1)),
        ("2024-03-31", "+01:00", (MARCH_31 - HOUR, MARCH_31 + 23 * HOUR - 1)),
        ("2024-03-31", "UTC-05", (MARCH_31 + 5 * HOUR, MARCH_31 + 29 * HOUR - 1)),
        ("2024-03-31T00:00:00Z", "Europe/Paris", (MARCH_31, MARCH_31 + 999)),  # its own offset wins
        ("31/03/2024", "Europe/Paris", (MARCH_31 - HOUR, MARCH_31 + 22 * HOUR - 1)),
        (MARCH_31 + 90 * 60_000, "Europe/Paris", (MARCH_31 + 30 * 60_000, MARCH_31 + 30 * 60_000)),  # as OpenSearch
    ],
)
def test_a_bound_is_read_on_the_zones_clock(bound: object, zone: str, span: tuple[int, int]) -> None:
    form = "dd/MM/yyyy" if isinstance(bound, str) and "/" in bound else None
    assert date_span(bound, form, time_zone(zone)) == span


@pytest.mark.parametrize(
    ("value", "millis"),
    [
        ("2024-05-01T10:00Europe/Paris", MAY_1 + 8 * HOUR),
        ("2024-05-01T10Europe/Paris", MAY_1 + 8 * HOUR),
        ("2024-03-31T02:30:00Europe/Paris", MARCH_31 + 90 * 60_000),
        ("2024-05-01T10:00:00GMT+01:00", MAY_1 + 9 * HOUR),
        ("2024-05-01T10:00:00UTC", MAY_1 + 10 * HOUR),
    ],
)
def test_a_date_may_name_its_own_zone_after_its_time(value: str, millis: int) -> None:
    # Before, each was refused as no date; both clusters read them.
    assert parse_date(value) == millis
    assert date_span(value, None, time_zone("Asia/Tokyo"))[0] == millis  # its own zone wins over the range's


@pytest.mark.parametrize("value", ["2024-05-01Europe/Paris", "2024-05-01T10:00:00europe/paris", "2024-05-01T10 UTC"])
def test_a_zone_by_name_the_clusters_refuse_in_a_date_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"failed to parse date field|Unknown time-zone ID"):
        parse_date(value)


@pytest.mark.parametrize(
    ("zone", "seconds"),
    [
        ("Z", 0),
        ("+1", 3600),
        ("-0530", -19800),
        ("+01:30", 5400),
        ("+010203", 3723),
        ("GMT+01:00:00", 3600),
        ("UT-2", -7200),
        ("UTC", 0),
        ("+18:00", 64800),
    ],
)
def test_offsets_are_read_as_zone_offset_of_reads_them(zone: str, seconds: int) -> None:
    offset = time_zone(zone).utcoffset(None)
    assert offset is not None and offset.total_seconds() == seconds


@pytest.mark.parametrize(
    ("zone", "words"),
    [
        ("Foo/Bar", "Unknown time-zone ID: Foo/Bar"),
        ("europe/paris", "Unknown time-zone ID: europe/paris"),  # region names are case-sensitive
        ("EST", "Unknown time-zone ID: EST"),  # in the system's database, not in java.time's
        ("localtime", "Unknown time-zone ID: localtime"),
        ("+1:00", "Invalid ID for ZoneOffset, invalid format: +1:00"),
        ("z", "Invalid ID for ZoneOffset, invalid format: z"),
        ("+19:00", "Zone offset hours not in valid range: value 19 is not in the range -18 to 18"),
        ("UTC+", "Invalid ID for offset-based ZoneId: UTC+"),
    ],
)
def test_a_zone_the_clusters_refuse_is_refused_in_their_words(zone: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"^{words.replace('+', '[+]')}$"):
        time_zone(zone)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("days", {"mappings": {"properties": {"d": {"type": "date"}, "n": {"type": "long"}}}})
    moments = ["2024-03-30T23:30:00Z", "2024-03-31T21:59:00Z", "2024-03-31T22:30:00Z"]
    engine.bulk("days", [BulkAction("index", f"v{n}", {"d": moment, "n": n}) for n, moment in enumerate(moments)])
    engine.refresh("days")
    yield engine
    engine.close()


def _ids(engine: EmbeddedEngine, bounds: dict[str, Any], field: str = "d") -> set[str]:
    return {hit.id for hit in engine.search("days", {"query": {"range": {field: bounds}}}).hits}


def test_a_range_reads_its_bounds_in_its_time_zone(engine: EmbeddedEngine) -> None:
    # Before, every range with a time_zone was refused as an unsupported parameter.
    assert _ids(engine, {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "Europe/Paris"}) == {"v0", "v1"}
    assert _ids(engine, {"gte": "2024-03-31", "lte": "2024-03-31"}) == {"v1", "v2"}
    assert _ids(engine, {"gte": 1, "time_zone": "Europe/Paris"}, "n") == {"v1", "v2"}  # other fields ignore it


@pytest.mark.parametrize("field", ["d", "n", "unmapped"])
def test_an_unknown_zone_is_refused_on_any_field(engine: EmbeddedEngine, field: str) -> None:
    with pytest.raises(RequestRejected, match=r"Unknown time-zone ID: Mars/Olympus") as refused:
        _ids(engine, {"gte": 1, "time_zone": "Mars/Olympus"}, field)
    assert refused.value.status == 400
