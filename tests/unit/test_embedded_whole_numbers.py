"""A whole-number field (integer, long, short, byte) keeps a written fraction as a cluster does: dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine

VALUES = {"float": 5.7, "negative": -5.7, "text": "5.7", "five": 5, "six": 6, "exponent": "5.2e0"}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("numbers", {"mappings": {"properties": {"n": {"type": "integer"}, "l": {"type": "long"}}}})
    written = engine.bulk("numbers", [BulkAction("index", key, {"n": v, "l": v}) for key, v in VALUES.items()])
    assert not written.failed
    yield engine
    engine.close()


# What OpenSearch 3.6 and Elasticsearch 9 answer on the same documents (both alike).
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ({"term": {"n": 5}}, {"float", "text", "five", "exponent"}),
        ({"term": {"n": 5.7}}, set()),
        ({"term": {"n": -5}}, {"negative"}),
        ({"range": {"n": {"gte": 5.5}}}, {"six"}),
        ({"range": {"n": {"lt": 5.5}}}, {"float", "negative", "text", "five", "exponent"}),
        ({"terms": {"l": [5, 5.7]}}, {"float", "text", "five", "exponent"}),
        ({"range": {"l": {"gt": 5}}}, {"six"}),
    ],
)
def test_a_fraction_written_to_a_whole_number_field_is_dropped(
    engine: EmbeddedEngine, query: dict[str, Any], found: set[str]
) -> None:
    # Before: 5.7 was kept, so a term of 5 missed it, a term of 5.7 found it and "gte 5.5" found it too.
    assert {hit.id for hit in engine.search("numbers", {"query": query}).hits} == found


def test_sort_values_are_the_stored_whole_numbers(engine: EmbeddedEngine) -> None:
    body = {"query": {"match_all": {}}, "sort": [{"n": "asc"}, {"_id": "asc"}]}
    hits = engine.search("numbers", body).raw["hits"]["hits"]
    assert [hit["sort"][0] for hit in hits] == [-5, 5, 5, 5, 5, 6]
