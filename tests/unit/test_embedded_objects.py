"""Objects in the embedded engine's documents: which values an object field takes, and the values read from
arrays of objects."""

from __future__ import annotations

import pytest

from esbridge.engines.embedded.mapping import DocumentError, Schema
from esbridge.engines.embedded.shapes import value_at

SCHEMA = Schema(
    {
        "properties": {
            "meta": {"type": "object", "enabled": False},
            "parts": {"properties": {"kind": {"type": "keyword"}, "inner": {"properties": {"n": {"type": "long"}}}}},
            "shapes": {
                "properties": {"v": {"type": "knn_vector", "dimension": 2, "method": {"space_type": "cosinesimil"}}}
            },
        }
    },
    {},
)


@pytest.mark.parametrize("meta", [{"a": 1}, [{"a": 1}, "b"], "plain", 3, [], None])
def test_an_unindexed_object_takes_any_value(meta: object) -> None:
    SCHEMA.check({"meta": meta})


def test_an_indexed_object_takes_objects_and_arrays_of_them_and_checks_each() -> None:
    SCHEMA.check({"parts": [{"kind": "x"}, None, {"inner": [{"n": 1}, {"n": "2"}]}]})
    with pytest.raises(DocumentError, match=r"object mapping for \[parts\]"):
        SCHEMA.check({"parts": [{"kind": "x"}, "y"]})
    with pytest.raises(DocumentError, match=r"field \[parts.inner.n\]"):
        SCHEMA.check({"parts": [{"inner": {"n": "many"}}]})
    with pytest.raises(DocumentError, match="holds vectors"):
        SCHEMA.check({"shapes": [{"v": [1, 0]}, {"v": [0, 1]}]})


def test_values_are_read_through_arrays_of_objects() -> None:
    source = {"parts": [{"kind": "x", "inner": [{"n": 1}, {"n": [2, 3]}]}, {"kind": ["y", "z"]}, {}, "stray"]}
    assert value_at(source, ("parts", "kind")) == ["x", "y", "z"]
    assert value_at(source, ("parts", "inner", "n")) == [1, 2, 3]
    assert value_at({"parts": {"kind": ["x", "y"]}}, ("parts", "kind")) == ["x", "y"]
    assert value_at({"parts": {}}, ("parts", "kind")) is None
