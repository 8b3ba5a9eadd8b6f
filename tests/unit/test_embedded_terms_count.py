"""How many values a ``terms`` query may hold on the embedded engine: the index's ``index.max_terms_count``, as on
both clusters (tests/integration/test_search.py asks them the same), and however many that is, the filter
answers on either of the engine's paths (tantivy, or SQL where tantivy cannot express the query)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine

MAPPINGS = {"properties": {"tags": {"type": "keyword"}, "when": {"type": "date"}, "size": {"type": "float"}}}
DOCS = {
    "a": {"tags": ["alpha"], "when": "2024-05-01", "size": 1.5},
    "b": {"tags": ["beta"], "when": "2023-01-01", "size": 2.5},
}
# A range over keywords is outside what tantivy is asked, so the bool around it runs as SQL.
THROUGH_SQL = {"range": {"tags": {"gte": "a"}}}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def _index(engine: EmbeddedEngine, name: str, settings: dict[str, Any]) -> str:
    engine.create_index(name, {"settings": settings, "mappings": MAPPINGS})
    engine.bulk(name, [BulkAction(op="index", id=key, document=doc) for key, doc in DOCS.items()])
    return name


def _matching(engine: EmbeddedEngine, index: str, query: dict[str, Any], *, sql: bool = False) -> list[str]:
    if sql:
        query = {"bool": {"filter": [query, THROUGH_SQL]}}
    return sorted(hit.id for hit in engine.search(index, {"query": query, "size": 10}).hits)


def _absent(count: int) -> list[str]:
    return [f"absent-{n}" for n in range(count)]


@pytest.mark.parametrize("raised", [100_000, "100000"])
@pytest.mark.parametrize("sql", [False, True])
def test_an_index_that_raises_max_terms_count_takes_that_many_values(
    engine: EmbeddedEngine, raised: object, sql: bool
) -> None:
    index = _index(engine, "raised", {"index": {"max_terms_count": raised}})
    values = ["alpha", *_absent(69_999)]
    assert _matching(engine, index, {"terms": {"tags": values}}, sql=sql) == ["a"]
    with pytest.raises(errors.RequestRejected, match=r"\[100001\].*allowed maximum of \[100000\]"):
        _matching(engine, index, {"terms": {"tags": [*values, *_absent(30_001)]}}, sql=sql)


@pytest.mark.parametrize("sql", [False, True])
def test_an_index_that_lowers_max_terms_count_refuses_more_values_in_a_clusters_words(
    engine: EmbeddedEngine, sql: bool
) -> None:
    index = _index(engine, "lowered", {"index.max_terms_count": 10})
    assert _matching(engine, index, {"terms": {"tags": ["alpha", *_absent(9)]}}, sql=sql) == ["a"]
    with pytest.raises(errors.RequestRejected) as refused:
        _matching(engine, index, {"terms": {"tags": ["alpha", *_absent(10)]}}, sql=sql)
    assert "The number of terms [11] used in the Terms Query request has exceeded the allowed maximum of [10]" in str(
        refused.value
    )
    assert "[index.max_terms_count]" in str(refused.value)
    assert engine.get_index_settings(index)["max_terms_count"] == 10


def test_without_the_setting_an_index_takes_the_clusters_default(engine: EmbeddedEngine) -> None:
    index = _index(engine, "default", {})
    assert _matching(engine, index, {"terms": {"tags": ["beta", *_absent(65_535)]}}) == ["b"]
    with pytest.raises(errors.RequestRejected, match=r"allowed maximum of \[65536\]"):
        _matching(engine, index, {"terms": {"tags": ["beta", *_absent(65_536)]}})


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (0, " must be >= 1"),
        (-1, " must be >= 1"),
        (2**31, " must be <= 2147483647"),
        ("abc", ""),
        (True, ""),
        (1.5, ""),
        ("1e5", ""),
    ],
)
def test_a_max_terms_count_a_cluster_refuses_is_refused_at_creation(
    engine: EmbeddedEngine, value: object, why: str
) -> None:
    with pytest.raises(errors.RequestRejected) as refused:
        engine.create_index("bad", {"settings": {"index.max_terms_count": value}, "mappings": MAPPINGS})
    shown = "true" if value is True else value
    assert f"Failed to parse value [{shown}] for setting [index.max_terms_count]{why}" in str(refused.value)
    assert not engine.index_exists("bad")


def test_many_dates_in_a_terms_filter_answer_through_sql(engine: EmbeddedEngine) -> None:
    """Each date stands for its day; thousands of them once made a SQL expression too deep for SQLite."""
    index = _index(engine, "dates", {})
    days = [f"2020-{month:02d}-{day:02d}" for month in range(1, 13) for day in range(1, 29)] * 10
    for sql in (False, True):
        assert _matching(engine, index, {"terms": {"when": [*days, "2024-05-01"]}}, sql=sql) == ["a"]
        assert _matching(engine, index, {"terms": {"when": days}}, sql=sql) == []
        assert _matching(engine, index, {"terms": {"size": [2.5, *range(3, 5000)]}}, sql=sql) == ["b"]


def test_a_sqlite_with_fewer_parameters_still_answers_large_filters(engine: EmbeddedEngine) -> None:
    """Many SQLite builds take at most 32,766 parameters a statement, fewer than a terms or ids filter may hold."""
    index = _index(engine, "small-sqlite", {})
    limit = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
    if limit is None:
        pytest.skip("this Python cannot lower SQLite's limits (Connection.setlimit came with 3.11)")
    engine._store.db.setlimit(limit, 32_766)  # type: ignore[attr-defined,unused-ignore]
    assert _matching(engine, index, {"terms": {"tags": ["alpha", *_absent(40_000)]}}, sql=True) == ["a"]
    assert _matching(engine, index, {"ids": {"values": ["b", *_absent(40_000)]}}, sql=True) == ["b"]
