"""A new index version whose creation is interrupted (Ctrl-C while the engine answers) is not left behind:
`index create` and `index reindex` can be run again and leave no empty version."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from esbridge.engines.base import Engine
from esbridge.engines.blocks import write_blocked
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import IndexAlreadyExists
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

PARAMS = IndexParameters(dimension=2)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


class InterruptedAfter:
    """The embedded engine, except that Ctrl-C arrives once the named call has done its work, before its answer
    is read (as an Elasticsearch create waits a second or more for its shards)."""

    def __init__(self, engine: EmbeddedEngine, call: str) -> None:
        self._engine = engine
        self._call = call

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        self._engine.create_index(index, body)
        if self._call == "create_index":
            raise KeyboardInterrupt

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        self._engine.update_aliases(actions)
        if self._call == "update_aliases":
            raise KeyboardInterrupt


def interrupted(engine: EmbeddedEngine, call: str) -> IndexManager:
    return IndexManager(cast(Engine, InterruptedAfter(engine, call)), "notes", PARAMS)


def test_a_reindex_interrupted_while_creating_its_version_leaves_none(engine: EmbeddedEngine) -> None:
    IndexManager(engine, "notes", PARAMS).create()
    with pytest.raises(KeyboardInterrupt):
        interrupted(engine, "create_index").reindex()
    assert not engine.index_exists("notes-v2")
    assert engine.alias_targets("notes") == ["notes-v1"]
    assert not write_blocked(engine.get_index_settings("notes-v1"))
    assert IndexManager(engine, "notes", PARAMS).reindex().new == "notes-v2"


@pytest.mark.parametrize("call", ["create_index", "update_aliases"])
def test_an_interrupted_index_create_leaves_no_version(engine: EmbeddedEngine, call: str) -> None:
    with pytest.raises(KeyboardInterrupt):
        interrupted(engine, call).create()
    assert [info.name for info in engine.list_indices("notes-v*")] == []
    assert engine.alias_targets("notes") == []
    assert IndexManager(engine, "notes", PARAMS).create() == "notes-v1"


class Raced:
    """The embedded engine, except that another reindex creates the same next version just before this one."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        mappings = body["mappings"]
        theirs = {**mappings, "_meta": {**mappings["_meta"], "esbridge_creation": "the other reindex's token"}}
        self._engine.create_index(index, {**body, "mappings": theirs})
        self._engine.create_index(index, body)


def test_a_version_another_reindex_created_is_not_deleted(engine: EmbeddedEngine) -> None:
    IndexManager(engine, "notes", PARAMS).create()
    with pytest.raises(IndexAlreadyExists):
        IndexManager(cast(Engine, Raced(engine)), "notes", PARAMS).reindex()
    assert engine.index_exists("notes-v2"), "it is the other reindex's to finish or delete"
    assert engine.alias_targets("notes") == ["notes-v1"]
