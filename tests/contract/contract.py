"""What every engine adapter must do alike: the same documents in give the same kinds of answers out,
and the same bad input gives the same error types. Subclass ``EngineContract`` and provide ``engine``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime

import pytest

from esbridge.engines.base import BulkAction, Engine, SearchResult
from esbridge.engines.blocks import write_blocked
from esbridge.engines.dialect import index_settings
from esbridge.errors import IndexAlreadyExists, IndexNotFound, RequestRejected
from esbridge.mappings.copy import COPIED_FIELDS, copy_documents
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters, render_index
from esbridge.query import bodies
from esbridge.query.link_graph import Direction, link_map
from esbridge.query.models import Filters
from tests.contract.records import CHUNKS, DIMENSION, PARAMS, UTC, ids


class EngineContract:
    """Tests any ``Engine`` must pass. Subclasses provide the ``engine`` fixture."""

    @pytest.fixture
    def engine(self) -> Iterator[Engine]:
        raise NotImplementedError("subclasses provide the engine under test")

    @pytest.fixture
    def prefix(self, engine: Engine) -> Iterator[str]:
        """A unique name prefix; every index under it is deleted afterwards."""
        name = f"esbridge-contract-{uuid.uuid4().hex[:10]}"
        yield name
        for info in engine.list_indices(f"{name}*"):
            engine.delete_index(info.name, missing_ok=True)

    @pytest.fixture
    def params(self, engine: Engine) -> IndexParameters:
        """PARAMS with the analysis the engine's build offers (a build without analysis-common gets core)."""
        return IndexManager(engine, "unused", PARAMS).params

    @staticmethod
    def require_text_analysis(engine: Engine) -> None:
        if not engine.probe().features.get("text_analysis", True):
            pytest.skip("this engine build lacks the analysis-common module (english stemming, code analyzer)")

    @pytest.fixture
    def loaded(self, engine: Engine, prefix: str) -> str:
        """An esbridge index (created by IndexManager) behind the alias ``prefix``, holding CHUNKS."""
        IndexManager(engine, prefix, PARAMS).create()
        result = engine.bulk(prefix, [BulkAction("index", chunk_id, chunk) for chunk_id, chunk in CHUNKS.items()])
        assert list(result.failed) == []
        engine.refresh(prefix)
        return prefix

    # Index lifecycle

    def test_create_exists_delete(self, engine: Engine, prefix: str) -> None:
        name = f"{prefix}-plain"
        body = {"settings": index_settings(engine.dialect), "mappings": {"properties": {"tag": {"type": "keyword"}}}}
        engine.create_index(name, body)
        assert engine.index_exists(name)
        with pytest.raises(IndexAlreadyExists):
            engine.create_index(name, body)
        assert engine.delete_index(name) is True
        assert not engine.index_exists(name)
        assert engine.delete_index(name, missing_ok=True) is False
        with pytest.raises(IndexNotFound):
            engine.delete_index(name)

    def test_a_missing_index_is_index_not_found(self, engine: Engine, prefix: str) -> None:
        missing = f"{prefix}-missing"
        with pytest.raises(IndexNotFound):
            engine.search(missing, {"query": {"match_all": {}}})
        with pytest.raises(IndexNotFound):
            engine.count(missing)
        with pytest.raises(IndexNotFound):
            engine.get_mapping(missing)
        assert engine.alias_targets(missing) == []

    def test_the_mapping_is_echoed_so_the_diff_is_empty(self, engine: Engine, prefix: str) -> None:
        manager = IndexManager(engine, prefix, PARAMS)
        assert manager.create() == f"{prefix}-v1"
        diff = manager.diff()
        assert diff.changes == (), [change.describe() for change in diff.changes]
        vector = engine.get_mapping(prefix)["properties"]["vector"]
        assert int(vector.get("dimension", vector.get("dims"))) == DIMENSION

    def test_put_mapping_adds_a_field_a_strict_index_then_accepts(self, engine: Engine, prefix: str) -> None:
        name = f"{prefix}-strict"
        properties = {"tag": {"type": "keyword"}}
        engine.create_index(
            name,
            {"settings": index_settings(engine.dialect), "mappings": {"dynamic": "strict", "properties": properties}},
        )
        refused = engine.bulk(name, [BulkAction("index", "a", {"tag": "x", "colour": "red"})])
        assert [failure.id for failure in refused.failed] == ["a"]
        engine.put_mapping(name, {"colour": {"type": "keyword"}})
        assert engine.get_mapping(name)["properties"]["colour"]["type"] == "keyword"
        accepted = engine.bulk(name, [BulkAction("index", "a", {"tag": "x", "colour": "red"})])
        assert list(accepted.succeeded) == ["a"]
        engine.refresh(name)
        assert ids(engine.search(name, {"query": {"term": {"colour": "red"}}})) == ["a"]

    # Writing

    def test_bulk_reports_bad_documents_and_keeps_the_rest(self, engine: Engine, prefix: str) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        good = CHUNKS["bread#0"]
        actions = [
            BulkAction("index", "good", good),
            BulkAction("index", "short-vector", {**good, "vector": [1.0, 0.0]}),
            BulkAction("index", "unmapped", {**good, "not_in_mapping": "x"}),
            BulkAction("update", "never-indexed", {"title": "x"}),
            BulkAction("delete", "never-indexed-either"),
        ]
        result = engine.bulk(prefix, actions)
        assert sorted(result.succeeded) == ["good", "never-indexed-either"]
        statuses = {failure.id: failure.status for failure in result.failed}
        assert statuses == {"short-vector": 400, "unmapped": 400, "never-indexed": 404}
        engine.refresh(prefix)
        assert engine.count(prefix) == 1

    def test_update_changes_only_the_given_fields(self, engine: Engine, loaded: str) -> None:
        result = engine.bulk(loaded, [BulkAction("update", "fox#0", {"title": "Red foxes"})])
        assert list(result.failed) == []
        engine.refresh(loaded)
        (hit,) = engine.search(loaded, {"query": {"ids": {"values": ["fox#0"]}}}).hits
        assert hit.source["title"] == "Red foxes"
        assert hit.source["body"] == CHUNKS["fox#0"]["body"]

    def test_count(self, engine: Engine, loaded: str) -> None:
        assert engine.count(loaded) == len(CHUNKS)
        engine.bulk(loaded, [BulkAction("delete", "fox#0")])
        engine.refresh(loaded)
        assert engine.count(loaded) == len(CHUNKS) - 1

    # Write blocks

    def test_a_write_block_refuses_every_write_until_it_is_lifted(self, engine: Engine, loaded: str) -> None:
        (index,) = engine.alias_targets(loaded)
        assert not write_blocked(engine.get_index_settings(index))
        actions = [
            BulkAction("index", "new#0", {**CHUNKS["fox#0"], "chunk_id": "new#0", "doc_id": "new"}),
            BulkAction("update", "owl#0", {"title": "Barn owls"}),
            BulkAction("delete", "bread#0"),
        ]

        engine.set_write_block(index, True)
        assert write_blocked(engine.get_index_settings(index))
        refused = engine.bulk(loaded, actions)
        assert list(refused.succeeded) == []
        assert [(failure.id, failure.status) for failure in refused.failed] == [
            ("new#0", 403),
            ("owl#0", 403),
            ("bread#0", 403),
        ]
        assert all("cluster_block_exception" in failure.reason for failure in refused.failed)
        assert all(failure.write_blocked and not failure.retryable for failure in refused.failed)
        engine.refresh(loaded)
        assert engine.count(loaded) == len(CHUNKS)
        (owl,) = engine.search(loaded, {"query": {"ids": {"values": ["owl#0"]}}}).hits
        assert owl.source["title"] == "Owls", "reads still work, and the refused update changed nothing"

        engine.set_write_block(index, False)
        assert not write_blocked(engine.get_index_settings(index))
        accepted = engine.bulk(loaded, actions)
        assert (sorted(accepted.succeeded), list(accepted.failed)) == (["bread#0", "new#0", "owl#0"], [])
        engine.refresh(loaded)
        assert engine.count(loaded) == len(CHUNKS)  # one added, one deleted

    def test_a_write_blocked_index_can_still_take_mapping_changes_and_be_deleted(
        self, engine: Engine, prefix: str
    ) -> None:
        name = f"{prefix}-blocked"
        engine.create_index(name, {"settings": index_settings(engine.dialect), "mappings": {"properties": {}}})
        engine.set_write_block(name, True)
        engine.put_mapping(name, {"colour": {"type": "keyword"}})
        assert engine.get_mapping(name)["properties"]["colour"]["type"] == "keyword"
        assert engine.delete_index(name) is True

    def test_reindex_blocks_the_old_version_only_while_it_copies_and_leaves_a_found_block(
        self, engine: Engine, loaded: str
    ) -> None:
        manager = IndexManager(engine, loaded, PARAMS)
        assert manager.reindex().new == f"{loaded}-v2"
        assert not write_blocked(engine.get_index_settings(f"{loaded}-v1")), "the block it set is lifted"
        assert not write_blocked(engine.get_index_settings(f"{loaded}-v2"))

        engine.set_write_block(f"{loaded}-v2", True)  # as a reindex killed mid-copy leaves it
        assert manager.reindex().new == f"{loaded}-v3"
        assert write_blocked(engine.get_index_settings(f"{loaded}-v2")), "a block it found is left in place"
        written = engine.bulk(loaded, [BulkAction("update", "fox#0", {"title": "Red foxes"})])
        assert list(written.failed) == [], "the new version takes writes"
        engine.refresh(loaded)
        assert engine.count(loaded) == len(CHUNKS)

    # Reading

    def test_bm25_finds_by_words_and_weighs_titles_over_bodies(self, engine: Engine, loaded: str) -> None:
        body = bodies.bm25_body(engine.dialect, "telescope", size=5, filters=Filters())
        assert ids(engine.search(loaded, body)) == ["astro#0", "astro#1"]

    def test_bm25_stems_english_words(self, engine: Engine, loaded: str) -> None:
        self.require_text_analysis(engine)
        body = bodies.bm25_body(engine.dialect, "hunting owl", size=5, filters=Filters())
        assert ids(engine.search(loaded, body)) == ["owl#0"]

    def test_code_identifiers_are_found_by_parts_and_whole(self, engine: Engine, loaded: str) -> None:
        self.require_text_analysis(engine)
        for text in ("getUserName", "user", "os.path.join", "user_name"):
            body = bodies.bm25_body(engine.dialect, text, size=5, filters=Filters())
            assert "helpers#0" in ids(engine.search(loaded, body)), text

    def test_knn_finds_the_nearest_first(self, engine: Engine, loaded: str) -> None:
        body = bodies.knn_body(engine.dialect, [0, 0, 1, 0], k=2, filters=Filters(), num_candidates=20)
        result = engine.search(loaded, body)
        assert ids(result) == ["astro#0", "astro#1"]
        assert result.hits[0].score > result.hits[1].score

    def test_knn_pre_filters_still_fill_k(self, engine: Engine, loaded: str) -> None:
        filters = Filters(terms={"tags": ["rare"]})
        body = bodies.knn_body(engine.dialect, [1, 0, 0, 0], k=3, filters=filters, num_candidates=20)
        assert sorted(ids(engine.search(loaded, body))) == ["archive#0", "archive#1", "archive#2"]

    def test_filters_on_terms_and_dates(self, engine: Engine, loaded: str) -> None:
        recent = Filters(terms={"tags": ["space", "food"]}, modified_after=datetime(2024, 1, 1, tzinfo=UTC))
        body = bodies.bm25_body(engine.dialect, "telescope sourdough", size=10, filters=recent)
        assert sorted(ids(engine.search(loaded, body))) == ["astro#0", "bread#0"]
        before = Filters(modified_before=datetime(2023, 12, 31, tzinfo=UTC))
        body = bodies.bm25_body(engine.dialect, "telescope", size=10, filters=before)
        assert ids(engine.search(loaded, body)) == ["astro#1"]

    def test_deprecated_chunks_are_left_out_unless_asked_for(self, engine: Engine, loaded: str) -> None:
        body = bodies.bm25_body(engine.dialect, "tomato soup", size=10, filters=Filters())
        assert ids(engine.search(loaded, body)) == []
        body = bodies.bm25_body(engine.dialect, "tomato soup", size=10, filters=Filters(include_deprecated=True))
        assert ids(engine.search(loaded, body)) == ["soup#0"]

    def test_links_body_finds_seeds_and_what_links_to_them(self, engine: Engine, loaded: str) -> None:
        engine.bulk(loaded, [BulkAction("update", "owl#0", {"links": ["fox"]})])
        engine.refresh(loaded)
        body = bodies.links_body(["fox"], size=10, filters=Filters())
        assert sorted(ids(engine.search(loaded, body))) == ["fox#0", "owl#0"]

    def test_links_bodies_read_first_chunks_in_document_order_one_direction_at_a_time(
        self, engine: Engine, loaded: str
    ) -> None:
        linking = ["owl#0", "archive#0", "archive#1", "archive#2", "astro#0", "astro#1"]
        engine.bulk(loaded, [BulkAction("update", item, {"links": ["fox"]}) for item in linking])
        engine.bulk(loaded, [BulkAction("update", "fox#0", {"links": ["bread"]})])
        engine.refresh(loaded)

        def read(direction: Direction, size: int) -> SearchResult:
            body = bodies.links_body(["fox"], size=size, filters=Filters(), direction=direction)
            return engine.search(loaded, body)

        assert ids(read("out", 10)) == ["fox#0"]
        assert ids(read("in", 10)) == ["archive#0", "astro#0", "owl#0"]
        # Cut short, every engine keeps the same documents: the first by id.
        cut = read("in", 2)
        assert (ids(cut), cut.total) == (["archive#0", "astro#0"], 3)
        assert ids(read("both", 10)) == ["archive#0", "astro#0", "fox#0", "owl#0"]

    def test_link_weights_are_stored_and_read_back_by_the_links_request(self, engine: Engine, loaded: str) -> None:
        # Ids with dots and spaces are keys of an unindexed object: stored as given, never mapped as fields.
        weights = {"fox": 3.5, "notes.2024 q1": 2.0}
        update = {"links": ["fox", "notes.2024 q1", "bear"], "link_weights": weights}
        engine.bulk(loaded, [BulkAction("update", "owl#0", update)])
        engine.refresh(loaded)
        result = engine.search(loaded, bodies.links_body(["fox"], size=10, filters=Filters()))
        owl = next(hit for hit in result.hits if hit.id == "owl#0")
        assert owl.source["link_weights"] == weights
        assert link_map(hit.source for hit in result.hits)["owl"] == {"fox": 3.5, "notes.2024 q1": 2.0, "bear": 1.0}

    def test_ids_query_returns_what_exists(self, engine: Engine, loaded: str) -> None:
        body = {"size": 5, "_source": ["title"], "query": {"ids": {"values": ["fox#0", "owl#0", "nothing#9"]}}}
        result = engine.search(loaded, body)
        assert sorted(ids(result)) == ["fox#0", "owl#0"]
        assert {hit.id: dict(hit.source) for hit in result.hits} == {
            "fox#0": {"title": "Foxes"},
            "owl#0": {"title": "Owls"},
        }

    def test_source_filtering_takes_excluded_paths_out_of_included_objects_and_their_arrays(
        self, engine: Engine, loaded: str
    ) -> None:
        metadata = {"a": 1, "b": {"c": 2, "d": 3}, "list": [{"x": 1, "y": 2}, {"y": 3}], "words": ["p", "q"]}
        assert list(engine.bulk(loaded, [BulkAction("update", "fox#0", {"metadata": metadata})]).failed) == []
        engine.refresh(loaded)

        def source(spec: object) -> dict[str, object]:
            body = {"size": 1, "_source": spec, "query": {"ids": {"values": ["fox#0"]}}}
            return dict(engine.search(loaded, body).hits[0].source)

        excluded = {"includes": ["metadata"], "excludes": ["metadata.b.c", "metadata.list.y"]}
        assert source(excluded) == {"metadata": {"a": 1, "b": {"d": 3}, "list": [{"x": 1}], "words": ["p", "q"]}}
        assert source(["metadata.list.x", "metadata.b.d"]) == {"metadata": {"b": {"d": 3}, "list": [{"x": 1}]}}
        assert source({"includes": ["title", "metadata.*"], "excludes": ["*.c", "*.y"]}) == {
            "title": "Foxes",
            "metadata": {"a": 1, "b": {"d": 3}, "list": [{"x": 1}], "words": ["p", "q"]},
        }
        emptied = {"excludes": ["metadata.b.c", "metadata.b.d", "metadata.list.x", "metadata.list.y"]}
        kept = {"a": 1, "words": ["p", "q"]}
        if engine.dialect == "opensearch":  # Elasticsearch drops what exclusions empty; OpenSearch keeps it
            kept |= {"b": {}, "list": []}
        assert source(emptied)["metadata"] == kept
        assert source({"includes": ["metadata.b.z"]}) == {}
        if engine.dialect == "opensearch":  # OpenSearch's * spans dots; Elasticsearch 9 finds nothing here
            assert source(["*.d", "*.x"]) == {"metadata": {"b": {"d": 3}, "list": [{"x": 1}]}}

    def test_size_zero_counts_matches(self, engine: Engine, loaded: str) -> None:
        result = engine.search(loaded, {"size": 0, "query": {"term": {"tags": "rare"}}})
        assert (result.hits, result.total) == ([], 3)

    def test_scan_pages_through_every_match_with_only_the_fields_asked(self, engine: Engine, loaded: str) -> None:
        hits = list(
            engine.scan(loaded, {"term": {"source": "contract"}}, ["chunk_id"], sort_field="chunk_id", page_size=4)
        )
        assert [hit.id for hit in hits] == sorted(CHUNKS)
        assert all(dict(hit.source) == {"chunk_id": hit.id} for hit in hits)

    def test_msearch_yields_one_answer_per_search_and_the_error_of_a_failed_one(
        self, engine: Engine, loaded: str
    ) -> None:
        good = {"size": 10, "query": {"term": {"tags": "animals"}}}
        bad = {"query": {"range": {"modified_at": {"gte": "not a date"}}}}
        first, second = engine.msearch(loaded, [good, bad])
        assert isinstance(first, SearchResult)
        assert sorted(ids(first)) == ["fox#0", "owl#0"]
        assert isinstance(second, RequestRejected)

    # Aliases

    def test_aliases_swap_atomically(self, engine: Engine, prefix: str, params: IndexParameters) -> None:
        alias, old, new = f"{prefix}-live", f"{prefix}-v1", f"{prefix}-v2"
        for name, chunk_id in ((old, "fox#0"), (new, "owl#0")):
            engine.create_index(name, render_index(engine.dialect, params))
            engine.bulk(name, [BulkAction("index", chunk_id, CHUNKS[chunk_id])])
            engine.refresh(name)
        engine.update_aliases([{"add": {"index": old, "alias": alias, "is_write_index": True}}])
        assert engine.alias_targets(alias) == [old]
        engine.update_aliases(
            [
                {"remove": {"index": old, "alias": alias}},
                {"add": {"index": new, "alias": alias, "is_write_index": True}},
            ]
        )
        assert engine.alias_targets(alias) == [new]
        assert ids(engine.search(alias, {"query": {"match_all": {}}})) == ["owl#0"]
        engine.bulk(alias, [BulkAction("index", "fox#0", CHUNKS["fox#0"])])
        engine.refresh(alias)
        assert (engine.count(old), engine.count(new)) == (1, 2)
        with pytest.raises(IndexNotFound):
            engine.update_aliases(
                [
                    {"add": {"index": old, "alias": f"{prefix}-other"}},
                    {"remove": {"index": f"{prefix}-gone", "alias": alias}},
                ]
            )
        assert engine.alias_targets(f"{prefix}-other") == []
        assert engine.alias_targets(alias) == [new]
        assert [info.name for info in engine.list_indices(f"{prefix}-v*")] == [old, new]

    def test_copy_through_the_client_keeps_ids_fields_and_vectors(
        self, engine: Engine, loaded: str, params: IndexParameters
    ) -> None:
        dest = f"{loaded}-client-copy"
        engine.create_index(dest, render_index(engine.dialect, params))
        assert copy_documents(engine, loaded, dest, page_size=2) == len(CHUNKS)
        engine.refresh(dest)
        copied = {
            hit.id: dict(hit.source)
            for hit in engine.scan(dest, {"match_all": {}}, COPIED_FIELDS, sort_field="chunk_id")
        }
        assert sorted(copied) == sorted(CHUNKS)
        for chunk_id, chunk in CHUNKS.items():
            assert copied[chunk_id]["vector"] == pytest.approx(chunk["vector"])
            assert {key: copied[chunk_id][key] for key in ("title", "body", "tags")} == {
                key: chunk[key] for key in ("title", "body", "tags")
            }
        body = bodies.knn_body(engine.dialect, [0, 0, 1, 0], k=1, filters=Filters(), num_candidates=20)
        assert ids(engine.search(dest, body)) == ["astro#0"]

    def test_reindex_copies_every_document(self, engine: Engine, loaded: str, params: IndexParameters) -> None:
        if not engine.probe().features.get("reindex", True):
            pytest.skip("this engine build has no reindex module")
        dest = f"{loaded}-copy"
        engine.create_index(dest, render_index(engine.dialect, params))
        assert engine.reindex(loaded, dest) == len(CHUNKS)
        engine.refresh(dest)
        assert engine.count(dest) == len(CHUNKS)
        body = bodies.knn_body(engine.dialect, [0, 0, 1, 0], k=1, filters=Filters(), num_candidates=20)
        assert ids(engine.search(dest, body)) == ["astro#0"]
