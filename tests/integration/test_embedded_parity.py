"""The embedded engine reads values as OpenSearch does: a date field's ``format`` and a range's, and a fraction
written to a whole-number field. The same documents are taken, and the same queries find the same documents (the
same on Elasticsearch where it agrees)."""

from __future__ import annotations

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
# Where the clusters differ, the embedded engine answers as OpenSearch, whose dialect it speaks.
OPENSEARCH_ONLY: list[tuple[str, list[Any], list[dict[str, Any]]]] = [
    ("epoch_second", [1700000000, 1700000000.5, -5], [{"gte": 1699999999, "lte": 1700000000}, {"lt": 1700000001}]),
    ("strict_date_optional_time||epoch_second", [1700000000, "2024-01-01", "1999"], [{"gte": 1700000000}]),
    ("strict_date_optional_time||epoch_millis", [1700000000000, 2024, -1000], [{"gte": 2024}, {"lt": 2024}]),
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


def test_a_format_the_embedded_engine_cannot_read_is_refused_at_creation(embedded: EmbeddedEngine) -> None:
    # The clusters take it; the embedded engine took it too, then refused every value written in it.
    body = {"mappings": {"properties": {"day": {"type": "date", "format": "dd/MM/yyyy"}}}}
    with pytest.raises(RequestRejected, match=r"date field 'day': format \[dd/MM/yyyy\] is not supported"):
        embedded.create_index("h98-ddmm", body)
    assert not embedded.index_exists("h98-ddmm")


WHOLE_VALUES: list[Any] = [5.7, -5.7, "5.7", 5, 6, "5.2e0"]
WHOLE_QUERIES: list[dict[str, Any]] = [
    {"term": {"n": 5}},
    {"term": {"n": 5.7}},
    {"term": {"n": -5}},
    {"range": {"n": {"gte": 5.5}}},
    {"range": {"n": {"lt": 5.5}}},
    {"terms": {"n": [5, 5.7]}},
]


def _whole_answers(engine: Engine) -> list[Any]:
    name = f"h98-whole-{uuid.uuid4().hex[:8]}"
    engine.create_index(name, {"mappings": {"properties": {"n": {"type": "integer"}}}})
    try:
        engine.bulk(name, [BulkAction("index", f"v{n}", {"n": value}) for n, value in enumerate(WHOLE_VALUES)])
        engine.refresh(name)
        answers: list[Any] = [sorted(hit.id for hit in engine.search(name, {"query": q}).hits) for q in WHOLE_QUERIES]
        body = {"query": {"match_all": {}}, "sort": [{"n": "asc"}]}
        answers.append([hit["sort"][0] for hit in engine.search(name, body).raw["hits"]["hits"]])
        return answers
    finally:
        engine.delete_index(name, missing_ok=True)


def test_a_fraction_written_to_a_whole_number_field_is_dropped_as_on_the_clusters(
    engine: Engine, embedded: EmbeddedEngine
) -> None:
    assert _whole_answers(embedded) == _whole_answers(engine)


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
