"""IndexManager on the embedded engine: what it says about a name that is not an alias it manages, and what a
reindex refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.blocks import write_blocked
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import DimensionMismatch, IndexNotFound
from esbridge.mappings.lifecycle import IndexManager, MappingNeedsNewVersion
from esbridge.mappings.schema import IndexParameters

PARAMS = IndexParameters(dimension=2)


def test_a_concrete_index_is_named_as_one_not_sent_to_index_create(tmp_path: Path) -> None:
    # `index create` refuses that name ("a concrete index has the alias's name"): do not send the operator there.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        engine.create_index("products", IndexManager(engine, "products", PARAMS).wanted_body())
        with pytest.raises(IndexNotFound, match=r"products is an index, not an alias .*products-v1") as caught:
            IndexManager(engine, "products", PARAMS).current()
        assert "esbridge index create" not in str(caught.value)
        with pytest.raises(IndexNotFound, match=r"run `esbridge index create`"):
            IndexManager(engine, "nothing", PARAMS).current()
    finally:
        engine.close()


def test_a_reindex_of_a_concrete_index_says_it_is_one(tmp_path: Path) -> None:
    # Not "the alias has no index": the name holds documents, only not behind esbridge's versions.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        engine.create_index("products", IndexManager(engine, "products", PARAMS).wanted_body())
        with pytest.raises(IndexNotFound, match=r"products is an index, not an alias .*products-v1") as caught:
            IndexManager(engine, "products", PARAMS).reindex()
        assert caught.value.operation == "reindex"
        with pytest.raises(IndexNotFound, match=r"no index behind this alias: nothing to reindex"):
            IndexManager(engine, "nothing", PARAMS).reindex()
    finally:
        engine.close()


def test_a_reindex_to_another_dimension_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    # Each copied vector would be refused by the new version; an empty index has none to copy.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", PARAMS).create()
        IndexManager(engine, "empty", PARAMS).create()
        engine.bulk("notes", [BulkAction("index", "a#0", {"chunk_id": "a#0", "vector": [0.6, 0.8]})])
        engine.refresh("notes")
        wider = IndexParameters(dimension=3)
        with pytest.raises(DimensionMismatch, match=r"notes-v1 holds 2-dimensional vectors .* has 3") as caught:
            IndexManager(engine, "notes", wider).reindex()
        assert "nothing was changed" in str(caught.value)
        assert [info.name for info in engine.list_indices("notes-v*")] == ["notes-v1"]
        assert engine.alias_targets("notes") == ["notes-v1"]
        assert not write_blocked(engine.get_index_settings("notes-v1"))
        assert IndexManager(engine, "empty", wider).reindex().new == "empty-v2"
        assert engine.get_mapping("empty")["properties"]["vector"]["dimension"] == 3
    finally:
        engine.close()


def test_apply_refusing_another_dimension_resolves_the_alias_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", PARAMS).create()
        assert not engine.bulk("notes", [BulkAction("index", "a#0", {"chunk_id": "a#0", "vector": [0.6, 0.8]})]).failed
        resolved: list[str] = []
        alias_targets = engine.alias_targets

        def counted(alias: str) -> list[str]:
            resolved.append(alias)
            return alias_targets(alias)

        monkeypatch.setattr(engine, "alias_targets", counted)
        with pytest.raises(MappingNeedsNewVersion, match=r"ingest the sources into a new index"):
            IndexManager(engine, "notes", IndexParameters(dimension=3)).apply()
        assert resolved == ["notes"]
    finally:
        engine.close()
