"""Recency reads ``modified_at`` as the engines do: each value the index's date field takes, recency takes as the
same moment, and each value the engine refuses, recency refuses (``esbridge.query.engine_dates``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from esbridge.engines import BulkAction, Engine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.bodies import filter_query
from esbridge.query.engine_dates import parse_engine_date
from esbridge.query.models import Filters
from esbridge.query.recency import aware, parse_modified_at

TAKEN: list[object] = [
    *["2024-05-01T10:00:00Z", "2024-05-01T10:00:00,5+02:00", "2024-05-01T10:00:00.123456789+0530", "2024-05-01T10"],
    *["2024-05-01T", "2024-05-01T10Z", "2024", "2024-05", "2024-02-29", "1700000000000", "1700000000000.5"],
    *["-1700000000000", "-1.5", "20240501", "2024-05-01T10:00:00Europe/Paris", "2024-05-01T10:00:00UTC"],
    *[1700000000000.5, 2024, 2024.0, "0000", "-1000", "2024-05-01T10:00:00UT+01:00", "9223372036854775807"],
    *["2000-02-29", "0000-02-29", "-0004-02-29", "-0400-02-29"],
    *["2024-05-01T10:00:00+01:00:30", "2024-05-01T10:00:00-00:00:30", "2024-05-01T10:00:00+18:00:00"],
]
REFUSED: list[object] = [
    *["2024-W05-3", "2024-W05", "2024-035", "20240501T100000", "2024-05-01 10:00:00", "2024-05-01T10:00:00z"],
    *["2024-05-01T24:00", "2024-05-01Z", " 2024-05-01", "1700000000000 ", "1e12", "+1700000000000", "2023-02-29"],
    *["2024-05-01T10:00:00+19:00", "2024-05-01T10:00:00EST", "2024-5-1", 1e16],
    *["-9223372036854775808", "2024-05-01T10:00:00UT+18:01", "1900-02-29", "-0001-02-29", "-0100-02-29"],
    *["2024-05-01T10:00:00+18:00:01", "2024-05-01T10:00:00+01:00:60", "2024-05-01T10:00:00Foo/Bar"],
]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _accepted(value: object) -> datetime | None:
    try:
        return parse_modified_at(value)
    except ValueError:
        return None


def test_recency_takes_exactly_the_dates_the_engine_takes(engine: Engine, index_name: str) -> None:
    manager = IndexManager(engine, index_name, IndexParameters(dimension=4))
    engine.create_index(index_name, manager.wanted_body())  # esbridge's own mapping of modified_at
    values = {f"d{number}": value for number, value in enumerate([*TAKEN, *REFUSED])}
    result = engine.bulk(
        index_name, [BulkAction("index", key, {"modified_at": value}) for key, value in values.items()]
    )
    engine.refresh(index_name)

    taken_by_engine = {key: values[key] for key in result.succeeded}
    assert sorted(map(repr, taken_by_engine.values())) == sorted(map(repr, TAKEN)), "the engine takes these"
    assert sorted(repr(value) for value in values.values() if _accepted(value) is not None) == sorted(map(repr, TAKEN))
    for key, value in taken_by_engine.items():
        moment = _accepted(value)
        assert moment is not None
        if moment.replace(tzinfo=None) in (datetime.min, datetime.max):
            continue  # outside the years 1 to 9999, which Python's datetime holds
        # The engine keeps whole milliseconds. ISO bounds, as OpenSearch 3.6 finds no value between equal negative
        # epoch_millis bounds.
        utc = _EPOCH + (aware(moment) - _EPOCH) // timedelta(milliseconds=1) * timedelta(milliseconds=1)
        shown = utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        same = {"range": {"modified_at": {"gte": shown, "lte": shown, "format": "strict_date_optional_time"}}}
        found = engine.search(index_name, {"query": {"bool": {"filter": [{"ids": {"values": [key]}}, same]}}})
        assert found.total == 1, f"{value!r}: recency reads {moment.isoformat()}, the engine another moment"


# Negative epoch milliseconds: n exactly, the millisecond before it, half a second after it, and the epoch.
BEFORE_1970 = {"m": -1_700_000_000_001, "n": -1_700_000_000_000, "n500": -1_699_999_999_500, "z": 0}
N = BEFORE_1970["n"]


def test_negative_epoch_millis_bounds_and_the_iso_bounds_esbridge_sends(engine: Engine, index_name: str) -> None:
    manager = IndexManager(engine, index_name, IndexParameters(dimension=4))
    engine.create_index(index_name, manager.wanted_body())
    engine.bulk(index_name, [BulkAction("index", key, {"modified_at": value}) for key, value in BEFORE_1970.items()])
    engine.refresh(index_name)

    def found(query: dict[str, object]) -> set[str]:
        return {hit.id for hit in engine.search(index_name, {"query": query, "size": 10}).hits}

    def ranged(**bounds: object) -> set[str]:
        return found({"range": {"modified_at": bounds}})

    # OpenSearch 3.6 reads a negative epoch_millis bound of lte or gt one millisecond early (lte N as lt N, gt N - 1
    # as gte N - 1); gte and lt, positive bounds and ISO 8601 bounds it reads as Elasticsearch does.
    late = engine.dialect == "opensearch"
    assert ranged(gte=N, lte=N) == (set() if late else {"n"})
    assert ranged(lte=N) == ({"m"} if late else {"m", "n"})
    assert ranged(gt=N - 1) == ({"m", "n", "n500", "z"} if late else {"n", "n500", "z"})
    assert ranged(gte=N) == {"n", "n500", "z"} and ranged(lt=N + 1) == {"m", "n"}
    assert ranged(gte=0, lte=0) == {"z"}
    iso = "1916-02-18T01:46:40.000Z"  # N
    assert ranged(gte=iso, lte=iso) == {"n"} and ranged(gt=iso) == {"n500", "z"}
    # esbridge's date filters send ISO 8601 bounds (datetime.isoformat), which both engines read alike: a bound to
    # the second stands for all of that second, as on the embedded engine.
    moment = datetime(1916, 2, 18, 1, 46, 40, tzinfo=timezone.utc)
    assert found(filter_query(Filters(modified_after=moment, modified_before=moment))) == {"n", "n500"}
    assert found(filter_query(Filters(modified_before=moment - timedelta(milliseconds=1)))) == {"m"}


OWN_FORMATS = ["epoch_second", "date_optional_time||epoch_second", "epoch_millis", "date_optional_time"]
OWN_VALUES: list[object] = [
    *["2024-5-1", "2024-05-1T1:2:3Z", "24-05-01", "2024-05-01T10:5", "2024-5", "2024", "-1000-01-01", "1700000000"],
    *["1700000000000", "1700000000.5", "-1700000000", 1700000000, 2024, "2024-05-01T10:00:00+02", "99999"],
]
"""Not "20240501": date_optional_time takes years of up to nine digits on Elasticsearch, five on OpenSearch."""


def test_recency_reads_an_attached_date_field_in_its_own_format(engine: Engine, index_name: str) -> None:
    """Each value a field of each format takes is read as the moment the engine reads (its epoch milliseconds)."""
    for number, formats in enumerate(OWN_FORMATS):
        name = f"{index_name}-{number}"
        engine.create_index(name, {"mappings": {"properties": {"updated": {"type": "date", "format": formats}}}})
        try:
            values = {f"d{n}": value for n, value in enumerate(OWN_VALUES)}
            engine.bulk(name, [BulkAction("index", key, {"updated": value}) for key, value in values.items()])
            engine.refresh(name)
            body = {"size": 50, "_source": False, "docvalue_fields": [{"field": "updated", "format": "epoch_millis"}]}
            hits = engine.search(name, body).raw["hits"]["hits"]
            read_by_engine = {hit["_id"]: int(float(hit["fields"]["updated"][0])) for hit in hits}
            assert read_by_engine, formats
            for key, millis in read_by_engine.items():
                moment = parse_modified_at(values[key], formats)
                assert moment is not None, f"{formats}: {values[key]!r}"
                if moment.replace(tzinfo=None) in (datetime.min, datetime.max):
                    assert not -62135596800000 <= millis <= 253402300799999, f"{formats}: {values[key]!r}"
                    continue
                ours = (aware(moment) - _EPOCH) // timedelta(milliseconds=1)
                assert ours == millis, f"{formats}: {values[key]!r} is {millis} ms to the engine, {ours} to recency"
        finally:
            engine.delete_index(name, missing_ok=True)


def test_a_number_bound_is_read_by_the_first_format_part_that_reads_it(engine: Engine, index_name: str) -> None:
    # What the embedded engine reads alike (tests/unit/test_embedded_attached_dates.py).
    engine.create_index(index_name, {"mappings": {"properties": {"updated": {"type": "date"}}}})
    dated = {"old": "2020-03-01T10:00:00Z", "new": "2026-11-01T10:00:00Z", "before_1970": -1_700_000_000_000}
    engine.bulk(index_name, [BulkAction("index", key, {"updated": value}) for key, value in dated.items()])
    engine.refresh(index_name)

    def ids(bounds: dict[str, object]) -> set[str]:
        return {hit.id for hit in engine.search(index_name, {"query": {"range": {"updated": bounds}}}).hits}

    assert ids({"lt": 2026, "format": "strict_date_optional_time"}) == {"old", "before_1970"}
    assert ids({"gte": 2026, "format": "strict_date_optional_time||epoch_millis"}) == {"new"}
    assert ids({"gte": 2026, "format": "epoch_millis||strict_date_optional_time"}) == {"old", "new"}


PATTERNS: dict[str, tuple[list[object], list[object]]] = {
    "dd/MM/yyyy HH:mm": (
        ["01/05/2024 10:00", "29/02/2024 23:59", "31/12/1969 00:00", "02/01/0001 00:00", "01/05/+12024 10:00"],
        [
            *["1/5/2024 10:00", "01/05/2024 10:00:00", "01/05/2024", "30/02/2024 10:00", "01/05/24 10:00"],
            *["01/05/2024T10:00", "01/05/2024 24:00", "01/13/2024 10:00", "01/05/0000 10:00", "1700000000000"],
            *["01/05/12024 10:00", 1700000000000],
        ],
    ),
    "yyyy/MM/dd||epoch_millis": (
        ["2024/05/01", "0001/01/02", "2024/02/29", "1700000000000", "-1700000000000", 1700000000000, "2024", 2024],
        ["2024-05-01", "2024/5/1", "2023/02/29", "0000/05/01", "2024/05/01 10:00", "24/05/01", "2024/05/01Z"],
    ),
    "yyyy-MM-dd'T'HH:mm:ss.SSSXXX": (
        ["2024-05-01T10:00:00.123+02:00", "2024-05-01T10:00:00.123Z", "2024-05-01T10:00:00.999-05:30"],
        ["2024-05-01T10:00:00.123", "2024-05-01T10:00:00.123+0200", "2024-05-01T10:00:00.12+02:00"],
    ),
    "EEE, dd MMM yyyy HH:mm:ss Z": (
        ["Wed, 01 May 2024 10:00:00 +0200", "Mon, 01 May 2024 10:00:00 +0000", "Sat, 02 Sep 2023 00:00:00 -0130"],
        [
            *["wed, 01 May 2024 10:00:00 +0200", "Wed, 01 may 2024 10:00:00 +0200", "Wed, 1 May 2024 10:00:00 +0200"],
            *["Wednesday, 01 May 2024 10:00:00 +0200", "Wed, 01 May 2024 10:00:00 GMT", "Sat, 02 Sept 2023 00:00:00 Z"],
        ],
    ),
    "yyyy-MM-dd['T'HH:mm[:ss]]": (
        ["2024-05-01", "2024-05-01T10:20", "2024-05-01T10:20:30"],
        ["2024-05-01T10", "2024-05-01T", "2024-05-01T10:20:3", "2024-05-01 10:20"],
    ),
}


@pytest.mark.parametrize("formats", list(PATTERNS))
def test_recency_reads_a_custom_java_pattern_as_the_engine_does(engine: Engine, index_name: str, formats: str) -> None:
    """The values a field of a custom pattern takes are the ones recency reads, each as the millisecond the engine
    reads; the ones it refuses recency leaves out."""
    taken, refused = PATTERNS[formats]
    engine.create_index(index_name, {"mappings": {"properties": {"updated": {"type": "date", "format": formats}}}})
    values = {f"d{n}": value for n, value in enumerate([*taken, *refused])}
    result = engine.bulk(index_name, [BulkAction("index", key, {"updated": value}) for key, value in values.items()])
    engine.refresh(index_name)

    assert sorted(repr(values[key]) for key in result.succeeded) == sorted(map(repr, taken)), "the engine takes these"
    read = [value for value in values.values() if parse_engine_date(value, formats) is not None]
    assert sorted(map(repr, read)) == sorted(map(repr, taken)), "recency reads these"
    body = {"size": 50, "_source": False, "docvalue_fields": [{"field": "updated", "format": "epoch_millis"}]}
    hits = engine.search(index_name, body).raw["hits"]["hits"]
    for hit in hits:
        value, millis = values[hit["_id"]], int(float(hit["fields"]["updated"][0]))
        moment = parse_engine_date(value, formats)
        assert moment is not None
        if moment.replace(tzinfo=None) in (datetime.min, datetime.max):
            assert not -62135596800000 <= millis <= 253402300799999, f"{formats}: {value!r}"
            continue
        ours = (aware(moment) - _EPOCH) // timedelta(milliseconds=1)
        assert ours == millis, f"{formats}: {value!r} is {millis} ms to the engine, {ours} to recency"
    assert len(hits) == len(taken)
