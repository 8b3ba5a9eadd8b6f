"""The embedded engine reads dates as OpenSearch does, in a date field's ``format`` and a range's, and refuses the
mapping updates the clusters refuse (numbers: ``test_embedded_parity_numbers``). The same documents are taken, and
the same queries find the same documents (the same on Elasticsearch where it agrees)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines import BulkAction, Engine
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineError, RequestRejected

# (format, values written, range bounds); every bound both clusters read alike.
CASES: list[tuple[str, list[Any], list[dict[str, Any]]]] = [
    (
        "epoch_second",
        [1700000000, "1700000000", 1700000000.5, "2024-01-01", -5],
        [
            {"gte": 1700000000},
            {"gte": "2023-11-14T22:13:20Z", "format": "strict_date_optional_time"},
            {"gte": 1700000000000, "format": "epoch_millis"},
            {"lt": 0},
        ],
    ),
    (
        "epoch_second||strict_date_optional_time",
        [1700000000, "2024-01-01", "1999"],
        [{"gte": 1700000000}, {"gte": "2024"}, {"gte": "1999", "lte": "1999"}],
    ),
    (
        "strict_date_optional_time||epoch_second",
        [1700000000, "2024-01-01", "1999"],
        [{"gte": "2024"}, {"gte": "1999", "lte": "1999"}],
    ),
    (
        "date_optional_time",
        ["2024-1-5", "2024-01-05T1:2:3", "2024-01-05", 1700000000000, "2024-01-05 01:02", "-2024-01-05"],
        [{"gte": "2024-1-5"}, {"gte": "2024-01-05", "lte": "2024-01-05"}, {"lt": "0000-01-01"}],
    ),
    (
        "strict_date_optional_time||epoch_millis",
        ["-0100-06-01", "-0200-01-01", "0001-01-01", "2024-01-01", "-100-01-01", "+2024-01-01", "0000-01-01"],
        [
            {"gte": "-0100-01-01", "format": "strict_date_optional_time"},
            {"gte": "-0100-06-01", "lte": "-0100-06-01", "format": "date_optional_time"},
            {"gte": "-0100-06-01", "format": "uuuu-MM-dd"},
            {"gte": "-0100", "format": "uuuu"},
            {"lt": "0000-01-01"},
            {"gte": "-3000"},
            {"gte": "-300"},
            {"gte": "-0100-06-01T00:00:00Z"},
        ],
    ),
]
CASES.append(
    (
        "strict_date_optional_time||epoch_millis",
        [1700000000000, "2024", 2024, 1999.5, -1000],
        [{"gte": "2024"}, {"lt": "2024"}, {"gte": "1700000000000"}, {"lte": "1999"}],
    )
)
# Custom Java patterns: the values each takes (strict widths, year of era, two-digit years, offsets) and its bounds.
CASES += [
    (
        "yyyy-MM-dd",
        [
            "2024-05-01",
            "2024-5-1",
            "+2024-05-01",
            "20240-05-01",
            "+20240-05-01",
            "0000-05-01",
            "0001-05-01",
            "-0100-05-01",
            "2024-02-30",
            "2024-05-01T00:00",
            2024,
            "2024-13-01",
            "0999-12-31",
        ],
        [{"gte": "2024-05-01"}, {"lte": "2024-05-01", "gt": "2024-04-30"}, {"lt": "1000-01-01"}],
    ),
    (
        "dd/MM/yyyy",
        ["01/05/2024", "1/5/2024", "31/04/2024", "29/02/2023", "29/02/2024", "2024-05-01"],
        [{"gte": "01/05/2024"}, {"lte": "29/02/2024"}, {"gte": "2024-03-01", "format": "yyyy-MM-dd"}],
    ),
    (
        "yyyy-MM-dd HH:mm:ss",
        ["2024-05-01 10:20:30", "2024-05-01 24:00:00", "2024-05-01 10:20", "2024-05-01T10:20:30", "2024-05-01 1:2:3"],
        [{"lte": "2024-05-01 10:20:30"}, {"gt": "2024-05-01 10:20:29"}, {"lt": "2024-05-01 10:20:30"}],
    ),
    (
        "yyyy/MM/dd||epoch_millis",
        ["2024/05/01", 1700000000000, "1700000000000", "2024-05-01"],
        [{"gte": "2024/05/01"}, {"lt": "2024/05/01"}, {"gte": 1714521600000}],
    ),
    ("d/M/y", ["1/5/2024", "01/05/2024", "1/5/24", "001/5/2024"], [{"lt": "1/1/1000"}, {"gte": "1/5/2024"}]),
    ("yyyyMMdd", ["20240501", "2024051", "202405011"], [{"gte": "20240501", "lte": "20240501"}]),
    ("uuuu-MM-dd", ["-0100-05-01", "0000-05-01", "+20240-05-01"], [{"lt": "0000-05-01"}, {"gt": "9999-12-31"}]),
    ("yy-MM-dd", ["24-05-01", "2024-05-01", "99-05-01"], [{"gte": "50-01-01"}, {"lte": "24-05-01"}]),
    (
        "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        [
            "2024-05-01T10:20:30.123+02:00",
            "2024-05-01T10:20:30.123Z",
            "2024-05-01T10:20:30.12+02:00",
            "2024-05-01T10:20:30.123+0200",
        ],
        [{"lte": "2024-05-01T08:20:30.123Z"}, {"gt": "2024-05-01T10:20:30.122+02:00"}],
    ),
    (
        "yyyy-MM-dd HH:mm:ssZ||yyyy-MM-dd HH:mm:ssX",
        ["2024-05-01 10:20:30+0200", "2024-05-01 10:20:30+02:00", "2024-05-01 10:20:30Z", "2024-05-01 10:20:30+02"],
        [{"gte": "2024-05-01 08:20:30+0000"}, {"lt": "2024-05-01 10:20:30Z"}],
    ),
    (
        "yyyy-MM-dd HH:mm:ss.S||strict_date_optional_time",
        ["2024-05-01 10:20:30.5", "2024-05-01T10:20:30.550Z", "2024-05-01T10:20:30.599Z", "2024-05-01 10:20:30.55"],
        [{"lte": "2024-05-01 10:20:30.5"}, {"lte": "2024-05-01T10:20:30.5"}, {"gt": "2024-05-01T10:20:30.5"}],
    ),
    ("yyyy-MM-dd'at'HH||yyyy-MM-dd''HH", ["2024-05-01at10", "2024-05-01'10"], [{"lte": "2024-05-01at10"}]),
]
# A range's time_zone: offsets and regions, across the days Paris and New York change their clocks.
PARIS_DAYS: list[Any] = ["2024-03-30T23:30:00Z", "2024-03-31T01:30:00Z", "2024-03-31T21:59:00Z", "2024-03-31T22:30:00Z"]
PARIS_DAYS += ["2024-10-27T00:30:00Z", "2024-10-27T01:30:00Z", "2024-10-27T22:59:00Z", 1711927800000]
CASES += [
    (
        "strict_date_optional_time||epoch_millis",
        PARIS_DAYS,
        [
            {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "Europe/Paris"},
            {"gte": "2024-10-27", "lt": "2024-10-28", "time_zone": "Europe/Paris"},
            {"gte": "2024-10-27T02:30:00", "lt": "2024-10-28", "time_zone": "Europe/Paris"},
            {"gt": "2024-10-27T02", "lte": "2024-10-27", "time_zone": "Europe/Paris"},
            {"gte": "2024-03-31T02:30:00", "lte": "2024-03-31", "time_zone": "Europe/Paris"},
            {"gte": "2024-03-31T00:00:00Z", "lte": "2024-03-31", "time_zone": "Europe/Paris"},
            {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "America/New_York"},
            {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "+01:00"},
            {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "-0530"},
            {"gte": "2024-03-31", "lte": "2024-03-31", "time_zone": "UTC+2"},
            {"gte": "2024-10-27", "lte": "2024-10-27", "time_zone": "Etc/GMT-14"},
            {"gte": "2024-10-27", "lte": "2024-10-27", "time_zone": "US/Eastern"},
        ],
    ),
    (
        "dd/MM/yyyy HH:mm||epoch_millis",
        ["10/03/2024 01:30", "10/03/2024 02:30", "10/03/2024 03:30", "03/11/2024 01:30", "03/11/2024 02:30"],
        [
            {"gte": "10/03/2024 02:00", "lt": "10/03/2024 04:00", "time_zone": "America/New_York"},
            {"gte": "03/11/2024 01:00", "lte": "03/11/2024 01:59", "time_zone": "America/New_York"},
            {"gte": "10/03/2024", "lt": "11/03/2024", "format": "dd/MM/yyyy", "time_zone": "America/New_York"},
        ],
    ),
]
# A zone by name written after the time, in a document or a bound.
NAMED_ZONES: list[Any] = ["2024-05-01T10:00Europe/Paris", "2024-05-01T10Europe/Paris", "2024-05-01T10:00:00UTC"]
NAMED_ZONES += ["2024-05-01Europe/Paris", "2024-05-01T10:00:00GMT+01:00", "2024-03-31T02:30:00Europe/Paris"]
NAMED_ZONES += ["2024-05-01T10:00:00europe/paris", "2024-05-01T10:00:00EST", "2024-05-01T04:00:00America/New_York"]
CASES.append(
    (
        "strict_date_optional_time||epoch_millis",
        NAMED_ZONES,
        [{"gte": "2024-05-01T09:00:00Europe/Paris"}, {"lte": "2024-05-01T08:00America/New_York"}],
    )
)
# Offsets to the second; day and month names (English, case-sensitive; the day not checked); optional sections.
CASES += [
    (
        "strict_date_optional_time||epoch_millis",
        [
            *["2024-01-02T03:04:05+01:00:30", "2024-01-02T03:04:05-01:00:30", "2024-01-02T03+01:00:30"],
            *["2024-01-02T03:04:05+18:00:00", "2024-01-02T03:04:05+18:00:01", "2024-01-02T03:04:05+18:01"],
            *["2024-01-02T03:04:05+01:00:60", "2024-01-02T03:04:05+01:0030", "2024-01-02T03:04:05UTC+01:00:30"],
        ],
        [{"gte": "2024-01-02T03:04:05+01:00:30", "lte": "2024-01-02T02:03:35Z"}, {"lt": "2024-01-02T02:03:35Z"}],
    ),
    ("date_optional_time", ["2024-1-2T3:4:5+01:00:30", "2024-01-02T03:04:05+1:00:30"], [{"lte": "2024-01-02"}]),
    (
        "EEE, dd MMM yyyy HH:mm:ss Z",
        [
            *["Tue, 02 Jan 2024 03:04:05 +0100", "tue, 02 Jan 2024 03:04:05 +0100", "TUE, 02 JAN 2024 03:04:05 +0100"],
            *["Tue, 02 jan 2024 03:04:05 +0100", "Mon, 02 Jan 2024 03:04:05 +0100", "Tue, 2 Jan 2024 03:04:05 +0100"],
            *["Tuesday, 02 Jan 2024 03:04:05 +0100", "Tue, 02 January 2024 03:04:05 +0100"],
            *["Sat, 02 Sep 2023 03:04:05 +0100", "Sat, 02 Sept 2023 03:04:05 +0100", "Tue, 02 Jan 2024 03:04:05 GMT"],
        ],
        [{"gte": "Tue, 02 Jan 2024 02:04:05 +0000"}, {"lt": "Fri, 01 Dec 2023 00:00:00 +0000"}],
    ),
    ("E dd MMM yyyy||EE dd MMM yyyy", ["Tue 02 Jan 2024", "Tuesday 02 Jan 2024"], [{"gte": "Mon 01 Jan 2024"}]),
    ("MMM yyyy", ["May 2024", "Jan 2024"], [{"gte": "Apr 2024", "lte": "Apr 2024"}, {"lte": "Jan 2024"}]),
    (
        "yyyy-MM-dd['T'HH[:mm[:ss]]]",
        ["2024-05-01", "2024-05-01T10", "2024-05-01T10:20", "2024-05-01T10:20:30", "2024-05-01T10:20:3", "2024-05-01T"],
        [{"gte": "2024-05-01T10", "lte": "2024-05-01T10"}, {"gt": "2024-05-01T10:20"}, {"lte": "2024-05-01T10:20:29"}],
    ),
    (
        "yyyy-MM-dd['T'HH:mm]",
        ["2024-05-01", "2024-05-01T10:20", "2024-05-01T10", "2024-05-01T10:20:30"],
        [{"gte": "2024-05-01", "lte": "2024-05-01"}, {"gt": "2024-05-01"}, {"lt": "2024-05-01T10:20"}],
    ),
    ("[EEE, ]dd MMM yyyy", ["02 Jan 2024", "Tue, 02 Jan 2024", "Tue 02 Jan 2024"], [{"gte": "Mon, 01 Jan 2024"}]),
    ("yyyy-MM-dd'T'HH:mm[XXX]", ["2024-05-01T10:20", "2024-05-01T10:20+02:00", "2024-05-01T10:20+0200"], []),
    ("yyyy-MM-dd||uuuu-MM-dd", ["0000-05-01", "2024-05-01"], [{"lt": "0001-01-01"}, {"gte": "0000-05-01"}]),
]
# Where the clusters differ, the embedded engine answers as OpenSearch, whose dialect it speaks.
OPENSEARCH_ONLY: list[tuple[str, list[Any], list[dict[str, Any]]]] = [
    ("epoch_second", [1700000000, 1700000000.5, -5], [{"gte": 1699999999, "lte": 1700000000}, {"lt": 1700000001}]),
    ("strict_date_optional_time||epoch_second", [1700000000, "2024-01-01", "1999"], [{"gte": 1700000000}]),
    ("strict_date_optional_time||epoch_millis", [1700000000000, 2024, -1000], [{"gte": 2024}, {"lt": 2024}]),
    # An epoch bound under a time_zone: OpenSearch reads its UTC clock time on the zone's clock, Elasticsearch does not.
    (
        "strict_date_optional_time||epoch_millis",
        PARIS_DAYS,
        [
            {"gte": 1711927800000, "time_zone": "Europe/Paris"},
            {"gte": "1711927800000", "time_zone": "Europe/Paris"},
            {"gte": 1711927800000, "format": "epoch_millis", "time_zone": "Europe/Paris"},
            {"gte": 1711848600000, "lte": 1711848600000, "time_zone": "Europe/Paris"},
            {"gte": 1711848600000, "lte": 1711848600000, "time_zone": "+05:00"},
        ],
    ),
    ("epoch_second", [1711920000, 1711927800, 1711900000], [{"gte": 1711927800, "time_zone": "+05:00"}]),
]


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def _answers(engine: Engine, form: str, values: list[Any], ranges: list[dict[str, Any]]) -> list[Any]:
    name = f"h98-dates-{uuid.uuid4().hex[:8]}"
    engine.create_index(name, {"mappings": {"properties": {"d": {"type": "date", "format": form}}}})
    try:
        written = engine.bulk(name, [BulkAction("index", f"v{n}", {"d": value}) for n, value in enumerate(values)])
        engine.refresh(name)
        answers: list[Any] = [sorted(written.succeeded)]
        for bounds in ranges:
            hits = engine.search(name, {"size": 50, "query": {"range": {"d": bounds}}}).hits
            answers.append((bounds, sorted(hit.id for hit in hits)))
        return answers
    finally:
        engine.delete_index(name, missing_ok=True)


@pytest.mark.parametrize(("form", "values", "ranges"), CASES, ids=[case[0] for case in CASES])
def test_formats_are_read_as_the_clusters_read_them(
    engine: Engine, embedded: EmbeddedEngine, form: str, values: list[Any], ranges: list[dict[str, Any]]
) -> None:
    assert _answers(embedded, form, values, ranges) == _answers(engine, form, values, ranges)


def test_where_the_clusters_differ_the_embedded_engine_answers_as_opensearch(
    engine: Engine, embedded: EmbeddedEngine
) -> None:
    if engine.dialect != "opensearch":
        pytest.skip("OpenSearch is the reference where the clusters differ")
    for form, values, ranges in OPENSEARCH_ONLY:
        assert _answers(embedded, form, values, ranges) == _answers(engine, form, values, ranges)


def test_a_format_the_embedded_engine_cannot_read_is_refused_at_creation(
    engine: Engine, embedded: EmbeddedEngine
) -> None:
    # The clusters take a full month name, and read it apart: OpenSearch 3.6 "Jan", Elasticsearch "January". The
    # embedded engine refuses it rather than read it as one of them.
    reads_short = _answers(engine, "dd MMMM yyyy", ["02 Jan 2024", "02 January 2024"], [])[0] == ["v0"]
    assert reads_short is (engine.dialect == "opensearch")
    body = {"mappings": {"properties": {"day": {"type": "date", "format": "dd MMMM yyyy"}}}}
    with pytest.raises(RequestRejected, match=r"date field 'day': format \[dd MMMM yyyy\] is not supported.*\[MMMM\]"):
        embedded.create_index("h98-ddmm", body)
    assert not embedded.index_exists("h98-ddmm")


@pytest.mark.parametrize("bound", ["2024-05-01T10:00:00Foo/Bar", "2024-02-30", "2024-05-01T10:00:00+18:00:01"])
def test_a_bound_the_clusters_fail_to_parse_is_refused_naming_value_and_format(
    engine: Engine, embedded: EmbeddedEngine, bound: str
) -> None:
    words = f"failed to parse date field [{bound}] with format [strict_date_optional_time||epoch_millis]"
    for each in (engine, embedded):
        name = f"h117-bound-{uuid.uuid4().hex[:8]}"
        each.create_index(name, {"mappings": {"properties": {"d": {"type": "date"}}}})
        try:
            each.bulk(name, [BulkAction("index", "v0", {"d": "2024-05-01"})])
            each.refresh(name)
            with pytest.raises(EngineError, match=re.escape(words)):
                each.search(name, {"query": {"range": {"d": {"gte": bound}}}})
        finally:
            each.delete_index(name, missing_ok=True)


@pytest.mark.parametrize("zone", ["Foo/Bar", "europe/paris", "EST", "+19:00", "z", "UTC+"])
def test_a_time_zone_the_clusters_refuse_is_refused_in_their_words(
    engine: Engine, embedded: EmbeddedEngine, zone: str
) -> None:
    reasons = []
    for each in (engine, embedded):
        name = f"h111-zone-{uuid.uuid4().hex[:8]}"
        each.create_index(name, {"mappings": {"properties": {"d": {"type": "date"}}}})
        try:
            with pytest.raises(EngineError) as refused:
                each.search(name, {"query": {"range": {"d": {"gte": "2024-01-01", "time_zone": zone}}}})
            assert getattr(refused.value, "status", None) == 400
            reasons.append(str(refused.value))
        finally:
            each.delete_index(name, missing_ok=True)
    words = reasons[0].split("Exception: ")[-1]
    assert words in reasons[1] and (zone in words or "valid range" in words)


FIXED_CHANGES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"type": "date"}, {"type": "date", "format": "epoch_second"}),
    ({"type": "text"}, {"type": "text", "analyzer": "english"}),
    ({"type": "object", "enabled": False}, {"type": "object", "enabled": True}),
    ({"properties": {"a": {"type": "keyword"}}}, {"properties": {"a": {"type": "long"}}}),
    ({"type": "text", "fields": {"raw": {"type": "keyword"}}}, {"type": "text", "fields": {"raw": {"type": "long"}}}),
]


def _updated(engine: Engine, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``engine`` takes a mapping update of field ``f`` from ``before`` to ``after``."""
    name = f"h98-update-{uuid.uuid4().hex[:8]}"
    engine.create_index(name, {"mappings": {"properties": {"f": before}}})
    try:
        engine.put_mapping(name, {"f": after})
    except EngineError:
        return False
    finally:
        engine.delete_index(name, missing_ok=True)
    return True


@pytest.mark.parametrize(
    ("before", "after"), FIXED_CHANGES, ids=["format", "analyzer", "enabled", "property type", "sub-field type"]
)
def test_a_mapping_update_of_a_fixed_parameter_is_refused_as_on_the_clusters(
    engine: Engine, embedded: EmbeddedEngine, before: dict[str, Any], after: dict[str, Any]
) -> None:
    assert _updated(embedded, before, after) is _updated(engine, before, after) is False
    assert _updated(embedded, after, after) is _updated(engine, after, after) is True
