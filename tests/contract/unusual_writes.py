"""What every engine does with unusual writes: arrays within arrays (read as one flat array), an empty string in a
number field (no value), a keyword value longer than Lucene's longest term (refused, unless ``ignore_above`` leaves
it unindexed), writes through an alias that has no write index (each refused), and a document nested thousands of
levels deep (refused alone), a reindex into an index that does not exist (refused, as the engine would guess its
mapping). Mixed into the engine contract classes, which provide ``engine`` and ``prefix``."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.dialect import index_settings
from esbridge.errors import IndexNotFound
from esbridge.mappings.lifecycle import IndexManager
from tests.contract.records import CHUNKS, PARAMS

LONGEST_TERM = 32766
"""Lucene's longest term, in UTF-8 bytes."""


class UnusualWritesContract:
    @staticmethod
    def _found(engine: Engine, index: str, query: dict[str, Any]) -> list[str]:
        return sorted(hit.id for hit in engine.search(index, {"size": 20, "_source": False, "query": query}).hits)

    def test_arrays_within_arrays_are_read_as_one_flat_array(self, engine: Engine, prefix: str) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        nested = {
            "tags": [["tide", "moon"], "sea"],
            "links": [[["harbour"]]],
            "chunk_index": [[7, 8], 9],
            "title": [["Lighthouse", "keepers"], "logbook"],
        }
        result = engine.bulk(prefix, [BulkAction("index", "nested#0", {**CHUNKS["fox#0"], **nested})])
        assert (list(result.succeeded), list(result.failed)) == (["nested#0"], [])
        engine.refresh(prefix)
        for query in (
            {"term": {"tags": "moon"}},
            {"term": {"tags": "sea"}},
            {"term": {"links": "harbour"}},
            {"range": {"chunk_index": {"gte": 8, "lte": 8}}},
            {"match": {"title": "lighthouse"}},
        ):
            assert self._found(engine, prefix, query) == ["nested#0"], query
        hit = engine.search(prefix, {"query": {"ids": {"values": ["nested#0"]}}, "_source": ["tags"]}).hits[0]
        assert hit.source == {"tags": [["tide", "moon"], "sea"]}  # (kept as written)

    def test_an_empty_string_in_a_number_field_is_no_value_and_in_a_date_field_refused(
        self, engine: Engine, prefix: str
    ) -> None:
        properties = {"count": {"type": "integer"}, "ratio": {"type": "float"}, "day": {"type": "date"}}
        index = f"{prefix}-empty"
        engine.create_index(index, {"settings": index_settings(engine.dialect), "mappings": {"properties": properties}})
        written: dict[str, dict[str, Any]] = {
            "count": {"count": ""},
            "ratio": {"ratio": ""},
            "among": {"count": ["", 5]},
            "blank": {"count": " "},
            "day": {"day": ""},
        }
        result = engine.bulk(index, [BulkAction("index", key, document) for key, document in written.items()])
        assert sorted(result.succeeded) == ["among", "count", "ratio"]
        assert {failure.id: failure.status for failure in result.failed} == {"blank": 400, "day": 400}
        engine.refresh(index)
        assert self._found(engine, index, {"exists": {"field": "count"}}) == ["among"]
        assert self._found(engine, index, {"exists": {"field": "ratio"}}) == []
        assert self._found(engine, index, {"range": {"count": {"gte": 5}}}) == ["among"]

    def test_a_keyword_value_longer_than_the_longest_term_is_refused_unless_ignored_above(
        self, engine: Engine, prefix: str
    ) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        written: dict[str, dict[str, Any]] = {
            "longest": {"tags": ["a" * LONGEST_TERM]},
            "ignored": {"title": "b" * (LONGEST_TERM + 1)},  # (title.raw: ignore_above 512)
            "over": {"tags": ["short", "c" * (LONGEST_TERM + 1)]},
            "emoji": {"status": "\N{GRINNING FACE}" * (LONGEST_TERM // 4 + 1)},  # (4 UTF-8 bytes each)
            "path": {"path": "d/" * LONGEST_TERM},
        }
        base = CHUNKS["fox#0"]
        result = engine.bulk(prefix, [BulkAction("index", key, {**base, **extra}) for key, extra in written.items()])
        assert sorted(result.succeeded) == ["ignored", "longest"]
        refused = {failure.id: failure for failure in result.failed}
        assert {key: failure.status for key, failure in refused.items()} == {"over": 400, "emoji": 400, "path": 400}
        for key, field in (("over", "tags"), ("emoji", "status"), ("path", "path")):
            assert field in refused[key].reason
        engine.refresh(prefix)
        assert self._found(engine, prefix, {"term": {"tags": "a" * LONGEST_TERM}}) == ["longest"]

    def test_writes_through_an_alias_without_a_write_index_are_each_refused(self, engine: Engine, prefix: str) -> None:
        body = {"settings": index_settings(engine.dialect), "mappings": {"properties": {"tag": {"type": "keyword"}}}}
        first, second, alias = f"{prefix}-a", f"{prefix}-b", f"{prefix}-read"
        engine.create_index(first, body)
        engine.create_index(second, body)
        engine.update_aliases([{"add": {"index": first, "alias": alias, "is_write_index": False}}])
        writes = [BulkAction("index", "one", {"tag": "x"}), BulkAction("delete", "two", None)]
        for _ in range(2):  # one index, then two, neither of them the write index
            result = engine.bulk(alias, writes)
            assert list(result.succeeded) == []
            assert [(failure.id, failure.status) for failure in result.failed] == [("one", 400), ("two", 400)]
            assert all("no write index is defined for alias" in failure.reason for failure in result.failed)
            engine.update_aliases([{"add": {"index": second, "alias": alias, "is_write_index": False}}])
        engine.update_aliases([{"remove": {"index": second, "alias": alias}}])
        engine.update_aliases([{"add": {"index": first, "alias": alias}}])  # (the flag no longer set)
        assert list(engine.bulk(alias, writes[:1]).succeeded) == ["one"]
        engine.refresh(alias)
        assert engine.count(alias) == 1

    def test_a_document_nested_thousands_of_levels_deep_is_refused_alone(self, engine: Engine, prefix: str) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        deep: dict[str, Any] = {"leaf": 1}
        for _ in range(5000):
            deep = {"inner": deep}
        actions = [
            BulkAction("index", "deep#0", {**CHUNKS["fox#0"], "metadata": deep}),
            BulkAction("index", "fox#0", CHUNKS["fox#0"]),
        ]
        result = engine.bulk(prefix, actions)
        assert list(result.succeeded) == ["fox#0"]
        assert [(failure.id, failure.status) for failure in result.failed] == [("deep#0", 400)]
        assert "nest" in result.failed[0].reason
        engine.refresh(prefix)
        assert engine.count(prefix) == 1

    def test_a_reindex_into_an_index_that_does_not_exist_is_refused_naming_it(
        self, engine: Engine, prefix: str
    ) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        assert list(engine.bulk(prefix, [BulkAction("index", "fox#0", CHUNKS["fox#0"])]).succeeded) == ["fox#0"]
        engine.refresh(prefix)
        missing = f"{prefix}-v2"
        with pytest.raises(IndexNotFound) as refused:
            engine.reindex(f"{prefix}-v1", missing)
        assert (refused.value.operation, refused.value.index) == ("reindex", missing)
        assert refused.value.reason == (
            f"the destination {missing} does not exist, so nothing was copied: a reindex does not create it, as the "
            "engine would give it a mapping of its own guessing (no analyzers, no vector field); create it with the "
            "wanted mapping first (`esbridge index reindex` does)"
        )
        assert not engine.index_exists(missing)
