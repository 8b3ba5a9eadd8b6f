"""Date filters on an attached index of the embedded engine: esbridge sends ISO 8601 bounds with
``format: strict_date_optional_time`` (the field may have its own format on a cluster), and the embedded engine
reads that format as a cluster does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from esbridge.config.fields import FieldMap
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.errors import RequestRejected
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher

PRODUCTS: dict[str, dict[str, Any]] = {
    "old": {"name": "solar panel", "updated": "2020-03-01T10:00:00Z"},
    "new": {"name": "solar lamp", "updated": "2026-11-01T10:00:00Z"},
    "before_1970": {"name": "solar clock", "updated": -1_700_000_000_000},
}
FIELDS = FieldMap(text={"name": 1.0}, title="name", date="updated")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    mapping = {"properties": {"name": {"type": "text"}, "updated": {"type": "date"}}}
    engine.create_index("products", {"mappings": mapping})
    engine.bulk("products", [BulkAction("index", key, source) for key, source in PRODUCTS.items()])
    engine.refresh("products")
    yield engine
    engine.close()


def found(engine: EmbeddedEngine, filters: Filters) -> set[str]:
    searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "products", None, fields=FIELDS)
    answer = asyncio.run(searcher.search(SearchRequest(query="solar", filters=filters, top_n=10)))
    return {hit.id for hit in answer.results}


def test_date_filters_on_an_attached_index_are_answered(engine: EmbeddedEngine) -> None:
    # Before, every such search failed: "range on [updated]: unsupported parameter(s) ['format']".
    after = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert found(engine, Filters(modified_after=after)) == {"new"}
    assert found(engine, Filters(modified_before=after)) == {"old", "before_1970"}
    # A stored negative epoch_millis value, to the second its ISO 8601 bound names (1916-02-18T01:46:40Z).
    moment = datetime(1916, 2, 18, 1, 46, 40, tzinfo=timezone.utc)
    assert found(engine, Filters(modified_after=moment, modified_before=moment)) == {"before_1970"}


@pytest.mark.parametrize(
    ("bounds", "refusal"),
    [
        ({"gte": "01 May 2024", "format": "dd MMMM yyyy"}, r"format \[dd MMMM yyyy\] is not supported"),
        ({"gte": "1700000000000", "format": "strict_date_optional_time"}, "failed to parse date field"),
        ({"gte": 1700000000000, "format": "strict_date_optional_time"}, "failed to parse date field"),
    ],
)
def test_a_range_format_is_read_as_a_cluster_reads_it(
    engine: EmbeddedEngine, bounds: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(RequestRejected, match=refusal):
        engine.search("products", {"query": {"range": {"updated": bounds}}})


def test_a_year_and_epoch_millis_bounds_under_their_formats_are_read(engine: EmbeddedEngine) -> None:
    def ids(bounds: dict[str, Any]) -> set[str]:
        return {hit.id for hit in engine.search("products", {"query": {"range": {"updated": bounds}}}).hits}

    assert ids({"gte": "2026", "format": "strict_date_optional_time"}) == {"new"}
    assert ids({"lte": -1_700_000_000_000, "format": "strict_date_optional_time||epoch_millis"}) == {"before_1970"}


def test_negative_epoch_millis_bounds_are_read_as_elasticsearch_reads_them(engine: EmbeddedEngine) -> None:
    # OpenSearch 3.6 reads lte and gt one millisecond early here (tests/integration/test_date_formats.py).
    def ids(**bounds: Any) -> set[str]:
        return {hit.id for hit in engine.search("products", {"query": {"range": {"updated": bounds}}}).hits}

    n = PRODUCTS["before_1970"]["updated"]
    assert ids(gte=n, lte=n) == ids(lte=n) == ids(lt=n + 1) == {"before_1970"}
    assert ids(gt=n - 1) == ids(gte=n) == set(PRODUCTS)
    assert ids(gt=n) == {"old", "new"} and ids(lt=n) == set()


def test_a_number_bound_is_read_by_the_first_format_part_that_reads_it_as_the_clusters_read_it(
    engine: EmbeddedEngine,
) -> None:
    # Both clusters read a JSON number as its text under a range's format: four digits are a year to
    # strict_date_optional_time (tests/integration/test_date_formats.py). It was taken as milliseconds here
    # whatever the format, so "before 2026" found only the document dated before 1970.
    def ids(bounds: dict[str, Any]) -> set[str]:
        return {hit.id for hit in engine.search("products", {"query": {"range": {"updated": bounds}}}).hits}

    assert ids({"lt": 2026, "format": "strict_date_optional_time"}) == {"old", "before_1970"}
    assert ids({"gte": 2026, "format": "strict_date_optional_time||epoch_millis"}) == {"new"}
    assert ids({"gte": 2026, "format": "epoch_millis||strict_date_optional_time"}) == {"old", "new"}
