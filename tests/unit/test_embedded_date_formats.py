"""A date field's ``format`` on the embedded engine: the values it takes, the moment each stands for, and the
bounds of ranges on it (tests/integration/test_embedded_parity.py compares them with the clusters)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import RequestRejected


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def _index(engine: EmbeddedEngine, form: str, values: dict[str, Any]) -> list[str]:
    engine.create_index("dates", {"mappings": {"properties": {"d": {"type": "date", "format": form}}}})
    written = engine.bulk("dates", [BulkAction("index", key, {"d": value}) for key, value in values.items()])
    return [f"{failure.id}: {failure.reason}" for failure in written.failed]


def _ids(engine: EmbeddedEngine, query: dict[str, Any]) -> set[str]:
    return {hit.id for hit in engine.search("dates", {"size": 50, "query": query}).hits}


def test_epoch_seconds_are_stored_as_the_moment_they_name(engine: EmbeddedEngine) -> None:
    # Before: 1700000000 was stored as 1700000000 milliseconds (1970-01-20), and an ISO bound missed it.
    refused = _index(
        engine, "epoch_second", {"n": 1700000000, "s": "1700000000", "half": 1700000000.5, "iso": "2024-01-01"}
    )
    assert refused == [
        "iso: mapper_parsing_exception: failed to parse field [d] of type [date]: '2024-01-01' is no date in format "
        "[epoch_second]"
    ]
    moment = {"gte": "2023-11-14T22:13:20Z", "lte": "2023-11-14T22:13:20Z", "format": "strict_date_optional_time"}
    assert _ids(engine, {"range": {"d": moment}}) == {"n", "s", "half"}
    sorted_hits = engine.search("dates", {"sort": [{"d": "asc"}], "query": {"match_all": {}}}).raw["hits"]["hits"]
    assert [hit["sort"] for hit in sorted_hits] == [[1700000000000], [1700000000000], [1700000000500]]
    # A bound in the field's format names its whole second, as on OpenSearch.
    assert _ids(engine, {"range": {"d": {"gte": 1699999999, "lte": 1700000000}}}) == {"n", "s", "half"}
    assert _ids(engine, {"range": {"d": {"lt": 1700000000}}}) == set()
    assert _ids(engine, {"term": {"d": 1700000000}}) == {"n", "s", "half"}


def test_the_parts_of_a_format_are_tried_in_order(engine: EmbeddedEngine) -> None:
    assert _index(engine, "epoch_second||strict_date_optional_time", {"secs": "1999", "day": "2024-01-01"}) == []
    assert _ids(engine, {"range": {"d": {"lt": "1970-01-01T00:33:20Z", "format": "strict_date_optional_time"}}}) == {
        "secs"
    }


def test_date_optional_time_takes_one_digit_fields_and_refuses_a_space(engine: EmbeddedEngine) -> None:
    refused = _index(engine, "date_optional_time", {"short": "2024-1-5T1:2:3", "spaced": "2024-01-05 01:02"})
    assert [reason.split(":")[0] for reason in refused] == ["spaced"]
    assert _ids(engine, {"range": {"d": {"gte": "2024-01-05T01:02:03Z", "format": "strict_date_optional_time"}}}) == {
        "short"
    }


@pytest.mark.parametrize(
    "form", ["dd MMMM yyyy", "strict_date_optional_time||yyyy-DDD", "yyyy-MM-dd[ HH:mm", "basic_date", ["epoch_millis"]]
)
def test_a_format_the_embedded_engine_cannot_read_is_refused_naming_field_and_format(
    engine: EmbeddedEngine, form: Any
) -> None:
    body = {"mappings": {"properties": {"meta": {"properties": {"day": {"type": "date", "format": form}}}}}}
    with pytest.raises(RequestRejected, match=r"date field 'meta\.day': format \[.*\] is not"):
        engine.create_index("dates", body)
    engine.create_index("dates", {"mappings": {"properties": {}}})
    with pytest.raises(RequestRejected, match=r"date field 'day': format \[.*\] is not"):
        engine.put_mapping("dates", {"day": {"type": "date", "format": form}})
    assert engine.get_mapping("dates") == {"properties": {}}


def test_negative_years_are_read_in_values_and_bounds(engine: EmbeddedEngine) -> None:
    # Before: a bound "-0100-01-01" was refused as no date, with or without a format.
    values = {"bc100": "-0100-06-01", "bc200": "-0200-01-01", "ad1": "0001-01-01", "year0": "0000-01-01"}
    assert _index(engine, "strict_date_optional_time||epoch_millis", values) == []
    assert _ids(engine, {"range": {"d": {"gte": "-0100-01-01", "format": "strict_date_optional_time"}}}) == {
        "bc100",
        "ad1",
        "year0",
    }
    assert _ids(engine, {"range": {"d": {"gte": "-0100-06-01", "lte": "-0100-06-01", "format": "uuuu-MM-dd"}}}) == {
        "bc100"
    }
    assert _ids(engine, {"range": {"d": {"lt": "0000-01-01"}}}) == {"bc100", "bc200"}
    assert _ids(engine, {"range": {"d": {"lte": "-0200", "format": "uuuu"}}}) == {"bc200"}
    with pytest.raises(RequestRejected, match=r"failed to parse date field \[-100-06-01\]"):
        _ids(engine, {"range": {"d": {"gte": "-100-06-01", "format": "strict_date_optional_time"}}})


def test_a_json_number_is_read_as_its_text_in_the_default_format(engine: EmbeddedEngine) -> None:
    # As OpenSearch 3.6 reads it: four digits are a year, in a document and in a term or range bound. Before, a JSON
    # number was epoch milliseconds here (2024 was 1970-01-01T00:00:02.024Z).
    values = {"year": 2024, "millis": 1700000000000, "bc": -1000}
    assert _index(engine, "strict_date_optional_time||epoch_millis", values) == []
    assert _ids(engine, {"term": {"d": 2024}}) == {"year"}
    assert _ids(engine, {"range": {"d": {"gte": 2024}}}) == {"year"}
    assert _ids(engine, {"range": {"d": {"lt": "0000"}}}) == {"bc"}
    assert _ids(engine, {"range": {"d": {"gte": 1700000000000, "lt": 1700000000001}}}) == {"millis"}
