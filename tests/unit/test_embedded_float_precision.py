"""``float``, ``half_float`` and ``scaled_float`` fields are searched, sorted and filtered at the precision a cluster
stores them at, while ``_source`` keeps what was written."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import RequestRejected

MAPPING = {
    "h": {"type": "half_float"},
    "f": {"type": "float"},
    "d": {"type": "double"},
    "s": {"type": "scaled_float", "scaling_factor": 10},
    "k": {"type": "keyword"},
}
DOCS = {
    "tenth": {"h": 0.1, "f": 0.1, "d": 0.1, "s": 0.3, "k": "a"},
    "large": {"h": 1000.3, "f": 16777217, "d": 0.2, "s": "0.25", "k": "a"},
    "small": {"h": "0.5", "f": 0.5, "d": 0.5, "s": -0.25, "k": "a"},
}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("numbers", {"mappings": {"properties": MAPPING}})
    written = engine.bulk("numbers", [BulkAction("index", key, source) for key, source in DOCS.items()])
    assert not written.failed
    yield engine
    engine.close()


# What OpenSearch 3.6 answers on the same documents (Elasticsearch alike, where it has the type: it has no
# scaled_float without its mapper-extras module).
QUERIES: list[tuple[dict[str, Any], set[str]]] = [
    ({"range": {"h": {"gte": 0.1}}}, {"large", "small"}),  # 0.1 is stored as 0.0999755859375, below the bound
    ({"range": {"h": {"lt": 0.1}}}, {"tenth"}),
    ({"range": {"h": {"gt": 0.0999755859375}}}, {"large", "small"}),
    ({"term": {"h": 0.1}}, {"tenth"}),  # a term's value is rounded as a stored one
    ({"term": {"h": 0.0999755859375}}, {"tenth"}),
    ({"term": {"h": 1000.5}}, {"large"}),  # 1000.3 is stored as 1000.5
    ({"terms": {"h": [1000.4, 7]}}, {"large"}),
    ({"term": {"f": 16777216}}, {"large"}),  # 16777217 is stored as 16777216.0
    ({"range": {"f": {"gt": 0.1}}}, {"large", "small"}),  # the bound is single precision too
    ({"range": {"f": {"lte": 0.1}}}, {"tenth"}),
    ({"range": {"d": {"gt": 0.1}}}, {"large", "small"}),
    ({"term": {"s": 0.26}}, {"tenth", "large"}),  # 0.3 and 0.25 are both stored as 3 tenths
    ({"term": {"s": -0.2}}, {"small"}),  # -2.5 tenths rounds up to -2
    ({"range": {"s": {"lte": 0.29}}}, {"tenth", "large", "small"}),  # the bound is rounded too: lte 0.3
    ({"range": {"s": {"lt": 0.25}}}, {"small"}),
    ({"range": {"s": {"gt": 0.3}}}, set()),
]


@pytest.mark.parametrize(("query", "found"), QUERIES)
def test_values_are_compared_at_the_precision_a_cluster_stores(
    engine: EmbeddedEngine, query: dict[str, Any], found: set[str]
) -> None:
    # Before: every value was kept as the double written: "gte 0.1" found 0.1, "term 1000.5" found nothing.
    assert {hit.id for hit in engine.search("numbers", {"query": query}).hits} == found
    # The same filter beside one only the SQL filters answer (a range on a keyword), and in the full-text search.
    beside = {"bool": {"filter": [query, {"range": {"k": {"gte": "a"}}}]}}
    assert {hit.id for hit in engine.search("numbers", {"query": beside}).hits} == found


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("h", [0.0999755859375, 0.5, 1000.5]),
        ("f", [0.10000000149011612, 0.5, 16777216.0]),
        ("s", [-0.2, 0.30000000000000004, 0.30000000000000004]),
    ],
)
def test_sort_values_are_the_stored_values_and_source_keeps_what_was_written(
    engine: EmbeddedEngine, field: str, values: list[float]
) -> None:
    body = {"query": {"match_all": {}}, "sort": [{field: "asc"}, {"_id": "asc"}]}
    hits = engine.search("numbers", body).raw["hits"]["hits"]
    assert [hit["sort"][0] for hit in hits] == values
    assert {hit["_id"]: hit["_source"] for hit in hits} == DOCS


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"term": {"h": 70000}}, "[half_float] supports only finite values, but got [70000.0]"),
    ({"range": {"h": {"gte": 65520}}}, "[half_float] supports only finite values, but got [65520.0]"),
    ({"terms": {"f": [1, 1e39]}}, "[float] supports only finite values, but got [Infinity]"),
    ({"range": {"f": {"lt": "NaN"}}}, "[float] supports only finite values, but got [NaN]"),
]


@pytest.mark.parametrize(("query", "shown"), REFUSED)
def test_a_value_beyond_the_type_is_refused_as_opensearch_refuses_it(
    engine: EmbeddedEngine, query: dict[str, Any], shown: str
) -> None:
    # Before: it was compared as the double it is and found nothing (as Elasticsearch does).
    with pytest.raises(RequestRejected, match=re.escape(shown)):
        engine.search("numbers", {"query": query})
    assert {hit.id for hit in engine.search("numbers", {"query": {"term": {"h": 65519}}}).hits} == set()


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"type": "scaled_float"}, r"field 's': Field \[scaling_factor\] is required"),
        ({"type": "scaled_float", "scaling_factor": 0}, r"\[scaling_factor\] must be a positive number, got \[0\]"),
    ],
)
def test_a_scaled_float_without_a_positive_scaling_factor_is_refused_as_on_a_cluster(
    tmp_path: Path, spec: dict[str, Any], words: str
) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        with pytest.raises(RequestRejected, match=words):
            engine.create_index("scaled", {"mappings": {"properties": {"s": spec}}})
        assert not engine.index_exists("scaled")
    finally:
        engine.close()
