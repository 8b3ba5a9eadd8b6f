"""A mapping update may not change a field parameter a cluster keeps fixed (OpenSearch 3.6 refuses each of these
with "Mapper for [name] conflicts with existing mapper"); the embedded engine took them and then read the field's
old values with the new parameter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import RequestRejected

COSINE = {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}
CHANGES: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    ({"type": "date"}, {"type": "date", "format": "epoch_second"}, "format"),
    ({"type": "text"}, {"type": "text", "analyzer": "english"}, "analyzer"),
    ({"type": "knn_vector", "dimension": 4, "method": COSINE}, {"type": "knn_vector", "dimension": 8}, "dimension"),
    ({"type": "object", "enabled": False}, {"type": "object", "enabled": True}, "enabled"),
    (
        {"type": "keyword", "fields": {"day": {"type": "date"}}},
        {"type": "keyword", "fields": {"day": {"type": "date", "format": "epoch_millis"}}},
        "format",
    ),
]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


@pytest.mark.parametrize(("before", "after", "option"), CHANGES)
def test_a_fixed_parameter_cannot_change(
    engine: EmbeddedEngine, before: dict[str, Any], after: dict[str, Any], option: str
) -> None:
    engine.create_index("things", {"mappings": {"properties": {"f": before}}})
    with pytest.raises(
        RequestRejected, match=rf"Mapper for \[f(\.day)?\] conflicts .* Cannot update parameter \[{option}\]"
    ):
        engine.put_mapping("things", {"f": after})
    assert engine.get_mapping("things")["properties"]["f"] == before


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"type": "date", "format": "epoch_second"}, {"type": "date", "format": "epoch_second"}),
        ({"type": "keyword", "ignore_above": 10}, {"type": "keyword", "ignore_above": 20}),
        ({"type": "object", "enabled": "false"}, {"type": "object", "enabled": False}),
        ({"type": "date", "format": "epoch_second"}, {"type": "date"}),  # left out: kept
    ],
)
def test_the_same_value_or_an_updatable_parameter_is_taken(
    engine: EmbeddedEngine, before: dict[str, Any], after: dict[str, Any]
) -> None:
    engine.create_index("things", {"mappings": {"properties": {"f": before}}})
    engine.put_mapping("things", {"f": after})
    assert engine.get_mapping("things")["properties"]["f"] == {**before, **after}


@pytest.mark.parametrize(
    ("before", "after", "refusal"),
    [
        (
            {"properties": {"a": {"type": "keyword"}}},
            {"properties": {"a": {"type": "long"}}},
            r"mapper \[f\.a\] cannot be changed from type \[keyword\] to \[long\]",
        ),
        (
            {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            {"type": "text", "fields": {"raw": {"type": "long"}}},
            r"mapper \[f\.raw\] cannot be changed from type \[keyword\] to \[long\]",
        ),
    ],
)
def test_an_object_property_or_sub_field_cannot_change_type(
    engine: EmbeddedEngine, before: dict[str, Any], after: dict[str, Any], refusal: str
) -> None:
    # OpenSearch's words; before, the new type was merged in and the values written before kept the old one.
    engine.create_index("things", {"mappings": {"properties": {"f": before}}})
    with pytest.raises(RequestRejected, match=refusal):
        engine.put_mapping("things", {"f": after})
    assert engine.get_mapping("things")["properties"]["f"] == before
