"""What every engine must read alike in the query language esbridge and its users send: dates in ranges and
terms (a bound stands for the whole span it names, counted by the millisecond), and ``search_after`` past the
last value of a field some documents lack. Arrays of objects are taken and each object's values filtered, and an
object that is not indexed takes any value. Mixed into the engine contract classes, which provide ``engine``,
``prefix`` and ``loaded``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.dialect import index_settings
from esbridge.errors import RequestRejected
from esbridge.query import bodies
from esbridge.query.models import Filters
from tests.contract.records import CHUNKS, UTC, ids

MAX_TERMS_COUNT = 65_536  # index.max_terms_count's default on both clusters
# As ingest writes a file's modification time: to the microsecond.
SUB_SECOND = {"fox#0": "2024-03-01T08:00:00.400000+00:00", "owl#0": "2024-03-01T08:00:01+00:00"}
EPOCH_MILLIS = {"bread#0": "1709251200000"}  # 2024-03-01T00:00:00Z, written as epoch milliseconds


class QueryDslContract:
    @staticmethod
    def _dated(engine: Engine, index: str, dates: dict[str, str]) -> None:
        written = engine.bulk(
            index, [BulkAction("update", key, {"modified_at": value}) for key, value in dates.items()]
        )
        assert list(written.failed) == []
        engine.refresh(index)

    @staticmethod
    def _matching(engine: Engine, index: str, query: dict[str, Any]) -> list[str]:
        return sorted(ids(engine.search(index, {"size": 20, "_source": ["chunk_id"], "query": query})))

    def test_a_date_bound_stands_for_the_span_it_names(self, engine: Engine, loaded: str) -> None:
        self._dated(engine, loaded, SUB_SECOND | EPOCH_MILLIS)

        def dated(bounds: dict[str, Any]) -> list[str]:
            return self._matching(engine, loaded, {"range": {"modified_at": bounds}})

        assert dated({"gte": "2024-03", "lt": "2024-04"}) == ["bread#0", "fox#0", "owl#0"]
        assert dated({"gte": "1709251200000", "lte": "2024-03-01"}) == ["bread#0", "fox#0", "owl#0"]
        assert dated({"gt": "2024-03-01"}) == ["astro#0"]
        assert dated({"gt": "2024-02", "lt": "2024-03"}) == ["git#0"], "a date without its day names its first day"
        assert dated({"gte": "2024-03-01T08:00:00.4009Z", "lte": "2024-03-01T08:00:00.4Z"}) == ["fox#0"]
        assert dated({"gt": "2024-03-01T08:00:00Z", "lt": "2024-03-01T10:00:02+02:00"}) == ["owl#0"]
        assert self._matching(engine, loaded, {"term": {"modified_at": "2024-03-01T08:00:00Z"}}) == ["fox#0"]
        assert self._matching(engine, loaded, {"terms": {"modified_at": ["2024-03-01T08", 1709251200000]}}) == [
            "bread#0",
            "fox#0",
            "owl#0",
        ]

    def test_numbers_and_booleans_in_a_text_field_are_found_by_their_text(self, engine: Engine, loaded: str) -> None:
        given = {"fox#0": 4711, "owl#0": [True, "night"]}
        assert (
            list(engine.bulk(loaded, [BulkAction("update", key, {"body": body}) for key, body in given.items()]).failed)
            == []
        )
        engine.refresh(loaded)
        assert self._matching(engine, loaded, {"match": {"body": "4711"}}) == ["fox#0"]
        assert self._matching(engine, loaded, {"match": {"body": "true"}}) == ["owl#0"]

    def test_matches_are_counted_as_track_total_hits_asks_and_not_counting_keeps_the_hits(
        self, engine: Engine, loaded: str
    ) -> None:
        everything: dict[str, Any] = {"size": 2, "_source": ["chunk_id"], "query": {"match_all": {}}}

        def total(tracked: object) -> object:
            return engine.search(loaded, {**everything, "track_total_hits": tracked}).raw["hits"].get("total")

        assert total(True) == {"value": len(CHUNKS), "relation": "eq"}
        assert total(3) == {"value": 3, "relation": "gte"}
        assert total(len(CHUNKS)) == {"value": len(CHUNKS), "relation": "eq"}
        assert total(False) is None
        bm25 = bodies.bm25_body(engine.dialect, "owls foxes telescope", size=10, filters=Filters())
        knn = bodies.knn_body(engine.dialect, [0, 1, 0, 0], k=3, filters=Filters(), num_candidates=20)
        for listing in (bm25, knn):
            uncounted, counted = (engine.search(loaded, {**listing, "track_total_hits": t}) for t in (False, True))
            assert "total" not in uncounted.raw["hits"]
            assert ids(uncounted) == ids(counted) != []
            assert [hit.score for hit in uncounted.hits] == [hit.score for hit in counted.hits]

    def test_a_filter_to_the_second_keeps_what_falls_within_that_second(self, engine: Engine, loaded: str) -> None:
        self._dated(engine, loaded, SUB_SECOND)
        filters = Filters(
            modified_after=datetime(2024, 3, 1, 8, 0, tzinfo=UTC), modified_before=datetime(2024, 3, 1, 8, 0)
        )
        assert self._matching(engine, loaded, bodies.filter_query(filters)) == ["fox#0"]
        knn = bodies.knn_body(engine.dialect, [0, 1, 0, 0], k=3, filters=filters, num_candidates=20)
        assert ids(engine.search(loaded, knn)) == ["fox#0"]
        bm25 = bodies.bm25_body(engine.dialect, "owls foxes", size=10, filters=filters)
        assert ids(engine.search(loaded, bm25)) == ["fox#0"]

    def test_search_after_the_last_value_goes_on_to_the_documents_without_one(
        self, engine: Engine, loaded: str
    ) -> None:
        def after(value: object) -> list[str]:
            body = {"size": 20, "_source": ["chunk_id"], "sort": [{"status": "asc"}], "search_after": [value]}
            return sorted(ids(engine.search(loaded, body)))

        assert after("deprecated") == sorted(key for key in CHUNKS if key != "soup#0")
        assert after("a") == sorted(CHUNKS)
        assert after(None) == [], "after a missing value come only its ties, which search_after passes over"

    def test_should_clauses_alone_need_a_match_whatever_minimum_should_match_says(
        self, engine: Engine, loaded: str
    ) -> None:
        def matching(spec: dict[str, Any]) -> list[str]:
            return self._matching(engine, loaded, {"bool": {**spec, "minimum_should_match": 0}})

        space = {"term": {"tags": "space"}}
        telescope = {"match": {"body": "telescope"}}
        code = {"exists": {"field": "code"}}  # a text field: not a full-text index query in the embedded engine
        assert matching({"should": [space]}) == ["astro#0", "astro#1"]
        assert matching({"should": [space], "must_not": [{"ids": {"values": ["astro#1"]}}]}) == ["astro#0"]
        assert matching({"should": [telescope]}) == ["astro#1"]
        assert matching({"should": [code]}) == ["helpers#0"]
        assert matching({"should": [code, telescope]}) == ["astro#1", "helpers#0"]
        assert matching({"should": [telescope], "filter": [space]}) == ["astro#0", "astro#1"], (
            "beside a filter: optional"
        )

    def test_arrays_of_objects_are_filtered_by_each_object_and_an_unindexed_object_takes_anything(
        self, engine: Engine, prefix: str
    ) -> None:
        name = f"{prefix}-objects"
        properties = {
            "meta": {"type": "object", "enabled": False},  # as esbridge's metadata and link_weights
            "parts": {"properties": {"kind": {"type": "keyword"}, "size": {"type": "integer"}}},
        }
        mappings = {"dynamic": "strict", "properties": properties}
        engine.create_index(name, {"settings": index_settings(engine.dialect), "mappings": mappings})
        documents: dict[str, dict[str, Any]] = {
            "a": {"parts": [{"kind": "x", "size": 1}, {"kind": "y"}], "meta": [{"any": 1}, "thing"]},
            "b": {"parts": {"kind": "z", "size": 5}, "meta": "plain"},
            "c": {"parts": [], "meta": 3},
            "d": {"parts": "x"},
        }
        written = engine.bulk(name, [BulkAction("index", key, value) for key, value in documents.items()])
        assert [failure.id for failure in written.failed] == ["d"], "only an indexed object refuses a plain value"
        engine.refresh(name)
        assert self._matching(engine, name, {"term": {"parts.kind": "y"}}) == ["a"]
        assert self._matching(engine, name, {"range": {"parts.size": {"gte": 1, "lte": 2}}}) == ["a"]
        assert self._matching(engine, name, {"exists": {"field": "parts.size"}}) == ["a", "b"]
        assert self._matching(engine, name, {"exists": {"field": "parts"}}) == ["a", "b"]
        assert self._matching(engine, name, {"exists": {"field": "meta"}}) == [], "what is not indexed is not found"
        # (With "_doc" after it: OpenSearch 3.6 leaves the documents without a number out of a sort on it alone.)
        body = {"size": 5, "_source": False, "query": {"match_all": {}}, "sort": [{"parts.size": "asc"}, "_doc"]}
        assert ids(engine.search(name, body)) == ["a", "b", "c"]

    def test_a_keyword_longer_than_ignore_above_is_kept_but_not_indexed(self, engine: Engine, loaded: str) -> None:
        long_title = "Foxes " * 100  # title.raw: ignore_above 512
        written = engine.bulk(loaded, [BulkAction("update", "fox#0", {"title": long_title})])
        assert list(written.failed) == []
        engine.refresh(loaded)
        assert self._matching(engine, loaded, {"term": {"title.raw": long_title}}) == []
        assert "fox#0" not in self._matching(engine, loaded, {"exists": {"field": "title.raw"}})
        assert "owl#0" in self._matching(engine, loaded, {"exists": {"field": "title.raw"}})
        body = {"size": 20, "_source": ["title"], "query": {"match_all": {}}, "sort": [{"title.raw": "desc"}, "_doc"]}
        result = engine.search(loaded, body)
        assert ids(result)[-1] == "fox#0", "without a value it sorts last"
        assert result.hits[-1].source["title"] == long_title

    def test_minimum_should_match_takes_counts_and_percentages_negative_ones_too(
        self, engine: Engine, loaded: str
    ) -> None:
        should = [
            {"term": {"tags": "space"}},
            {"match": {"body": "telescope"}},
            {"ids": {"values": ["astro#0", "fox#0"]}},
        ]
        code = {"exists": {"field": "code"}}  # read from the stored documents in the embedded engine, not tantivy
        both, some = ["astro#0", "astro#1"], ["astro#0", "astro#1", "fox#0"]
        cases = [  # (minimum_should_match, matching of the three clauses, of the four with code)
            (2, both, both),
            (-1, both, []),
            ("-1", both, []),
            ("67%", both, both),
            ("-50%", both, both),
            ("34%", some, [*some, "helpers#0"]),
            (4, [], []),
        ]
        for minimum, three, four in cases:
            query = {"bool": {"should": should, "minimum_should_match": minimum}}
            assert self._matching(engine, loaded, query) == three, minimum
            query = {"bool": {"should": [*should, code], "minimum_should_match": minimum}}
            assert self._matching(engine, loaded, query) == four, minimum

    def test_a_terms_filter_on_a_mapped_field_takes_at_most_max_terms_count_values(
        self, engine: Engine, loaded: str
    ) -> None:
        most = ["space", *(f"absent-{n}" for n in range(MAX_TERMS_COUNT - 1))]
        assert self._matching(engine, loaded, {"terms": {"tags": most}}) == ["astro#0", "astro#1"]
        too_many = [*most, "one-more"]
        assert self._matching(engine, loaded, {"terms": {"no_such_field": too_many}}) == [], "unmapped: no limit"
        filters = Filters(terms={"tags": too_many})
        refused_bodies = [
            {"query": {"terms": {"tags": too_many}}},
            bodies.bm25_body(engine.dialect, "telescope", size=10, filters=filters),
            bodies.knn_body(engine.dialect, [0, 0, 1, 0], k=2, filters=filters, num_candidates=20),
        ]
        for body in refused_bodies:
            with pytest.raises(RequestRejected) as refused:
                engine.search(loaded, body)
            assert f"[{MAX_TERMS_COUNT}]" in str(refused.value)
            assert "index.max_terms_count" in str(refused.value)

    def test_an_index_s_max_terms_count_raises_or_lowers_the_limit(self, engine: Engine, prefix: str) -> None:
        mappings = {"properties": {"tags": {"type": "keyword"}}}
        for limit in (10, 70_000):  # below and above the default
            index = f"{prefix}-terms-{limit}"
            engine.create_index(index, {"settings": {"index": {"max_terms_count": limit}}, "mappings": mappings})
            assert list(engine.bulk(index, [BulkAction("index", "one", {"tags": ["space"]})]).failed) == []
            engine.refresh(index)
            most = ["space", *(f"absent-{n}" for n in range(limit - 1))]
            assert [hit.id for hit in engine.search(index, {"query": {"terms": {"tags": most}}}).hits] == ["one"]
            with pytest.raises(RequestRejected) as refused:
                engine.search(index, {"query": {"terms": {"tags": [*most, "one-more"]}}})
            assert f"[{limit + 1}]" in str(refused.value)
            assert f"allowed maximum of [{limit}]" in str(refused.value)
            assert "index.max_terms_count" in str(refused.value)
        with pytest.raises(RequestRejected, match=r"\[index\.max_terms_count\] must be >= 1"):
            engine.create_index(
                f"{prefix}-terms-0", {"settings": {"index": {"max_terms_count": 0}}, "mappings": mappings}
            )
        assert not engine.index_exists(f"{prefix}-terms-0")
