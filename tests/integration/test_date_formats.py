"""Recency reads ``modified_at`` as the engines do: each value the index's date field takes, recency takes as the
same moment, and each value the engine refuses, recency refuses (``esbridge.query.engine_dates``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from esbridge.engines import BulkAction, Engine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.recency import aware, parse_modified_at

TAKEN: list[object] = [
    *["2024-05-01T10:00:00Z", "2024-05-01T10:00:00,5+02:00", "2024-05-01T10:00:00.123456789+0530", "2024-05-01T10"],
    *["2024-05-01T", "2024-05-01T10Z", "2024", "2024-05", "2024-02-29", "1700000000000", "1700000000000.5"],
    *["-1700000000000", "-1.5", "20240501", "2024-05-01T10:00:00Europe/Paris", "2024-05-01T10:00:00UTC"],
    *[1700000000000.5, 2024, 2024.0, "0000", "-1000", "2024-05-01T10:00:00UT+01:00", "9223372036854775807"],
    *["2000-02-29", "0000-02-29", "-0004-02-29", "-0400-02-29"],
]
REFUSED: list[object] = [
    *["2024-W05-3", "2024-W05", "2024-035", "20240501T100000", "2024-05-01 10:00:00", "2024-05-01T10:00:00z"],
    *["2024-05-01T24:00", "2024-05-01Z", " 2024-05-01", "1700000000000 ", "1e12", "+1700000000000", "2023-02-29"],
    *["2024-05-01T10:00:00+19:00", "2024-05-01T10:00:00EST", "2024-5-1", 1e16],
    *["-9223372036854775808", "2024-05-01T10:00:00UT+18:01", "1900-02-29", "-0001-02-29", "-0100-02-29"],
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
