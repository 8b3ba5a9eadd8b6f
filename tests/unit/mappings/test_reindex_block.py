"""Reindex on the embedded engine: writes are refused, never lost, while it copies; the block is lifted
afterwards, also when the reindex fails; a block a killed reindex left does not stop the next one."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from esbridge.engines.base import Engine
from esbridge.engines.blocks import write_blocked
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineResponseError, EngineUnavailable, IndexWriteBlocked
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder

PARAMS = IndexParameters(dimension=HashingEmbedder.dimension)


def records(*ids: str) -> list[dict[str, str]]:
    return [{"id": doc_id, "title": f"Note {doc_id}", "text": f"Something about {doc_id}."} for doc_id in ids]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def run_ingest(
    engine: Engine, folder: Path, rows: Sequence[dict[str, str]], embedder: HashingEmbedder | None = None
) -> IngestReport:
    path = folder / "notes.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    manager = IndexManager(engine, "notes", PARAMS)
    return ingest(path, engine=engine, manager=manager, embedder=embedder or HashingEmbedder(), options=IngestOptions())


class ReindexWhileEmbedding(HashingEmbedder):
    """An embedder during whose first call a whole reindex of ``notes`` runs: after the ingest read the
    index, before it writes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.moved_to: str | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.moved_to is None:
            self.moved_to = IndexManager(self.engine, "notes", PARAMS).reindex().new
        return super().embed(texts)


def test_an_ingest_writes_to_where_the_alias_points_when_it_writes(engine: EmbeddedEngine, tmp_path: Path) -> None:
    assert run_ingest(engine, tmp_path, records("a", "b")).failed == []
    embedder = ReindexWhileEmbedding(engine)
    report = run_ingest(engine, tmp_path, records("a", "b", "c"), embedder)
    assert (report.failed, report.chunks_indexed, embedder.moved_to) == ([], 1, "notes-v2")
    assert engine.alias_targets("notes") == ["notes-v2"]
    assert engine.count("notes") == 3, "the chunk written after the reindex moved the alias is behind it"


def test_an_ingest_into_a_blocked_index_fails_by_name_and_converges_when_run_again(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    assert run_ingest(engine, tmp_path, records("a", "b")).failed == []
    engine.set_write_block("notes-v1", True)  # a reindex killed mid-copy leaves this

    refused = run_ingest(engine, tmp_path, records("a", "c"))
    assert [failure["id"] for failure in refused.failed] == ["c#0", "b#0"], "the write and the stale delete"
    assert all("notes is write-blocked" in failure["reason"] for failure in refused.failed)
    assert any("run this command again" in warning for warning in refused.warnings)
    assert engine.count("notes") == 2

    assert IndexManager(engine, "notes", PARAMS).reindex().new == "notes-v2"
    again = run_ingest(engine, tmp_path, records("a", "c"))
    assert (again.failed, again.chunks_indexed, again.deleted) == ([], 1, 1)
    assert sorted(hit.id for hit in engine.scan("notes", {"match_all": {}}, [], sort_field="chunk_id")) == [
        "a#0",
        "c#0",
    ]


class Unblockable:
    """The embedded engine, except that lifting a write block fails as if the engine had gone away."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def set_write_block(self, index: str, blocked: bool) -> None:
        if not blocked:
            raise EngineUnavailable("cannot connect", url=self._engine.url, operation="allow writes", index=index)
        self._engine.set_write_block(index, blocked)


class CopyRefused:
    """An engine whose new version refuses every copied document: it is write-blocked as the copy starts."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        self._engine.set_write_block(dest, True)
        return self._engine.reindex(source, dest, timeout_s=timeout_s)


def test_a_failed_reindex_whose_block_cannot_be_lifted_says_so(engine: EmbeddedEngine, tmp_path: Path) -> None:
    run_ingest(engine, tmp_path, records("a"))
    failing = IndexManager(cast(Engine, CopyRefused(cast(Engine, Unblockable(engine)))), "notes", PARAMS)
    with pytest.raises(IndexWriteBlocked) as caught:
        failing.reindex()
    message = str(caught.value)
    assert "the reindex failed (" in message and "failed to copy" in message
    assert "the write block on notes-v1 could not be lifted" in message
    assert "writes to notes are refused until `esbridge index reindex` is run again" in message
    assert isinstance(caught.value.__cause__, EngineUnavailable)
    assert not engine.index_exists("notes-v2")


def test_a_reindex_that_moved_the_alias_but_cannot_lift_its_block_says_so(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    run_ingest(engine, tmp_path, records("a"))
    with pytest.raises(IndexWriteBlocked, match="notes now points to notes-v2, where writes go, but the write block"):
        IndexManager(cast(Engine, Unblockable(engine)), "notes", PARAMS).reindex()
    assert engine.alias_targets("notes") == ["notes-v2"]


def test_a_reindex_that_fails_to_copy_lifts_its_block(engine: EmbeddedEngine, tmp_path: Path) -> None:
    run_ingest(engine, tmp_path, records("a"))
    with pytest.raises(EngineResponseError, match="failed to copy"):
        IndexManager(cast(Engine, CopyRefused(engine)), "notes", PARAMS).reindex()
    assert not write_blocked(engine.get_index_settings("notes-v1"))
    assert run_ingest(engine, tmp_path, records("a", "b")).failed == []


class Overtaken:
    """The embedded engine, except that a whole second reindex of ``notes`` runs as the first one copies."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        IndexManager(self._engine, "notes", PARAMS).reindex()
        return self._engine.reindex(source, dest, timeout_s=timeout_s)


def test_a_reindex_overtaken_by_another_says_so(engine: EmbeddedEngine, tmp_path: Path) -> None:
    run_ingest(engine, tmp_path, records("a"))
    with pytest.raises(EngineResponseError, match=r"notes was moved to notes-v3 while this reindex copied notes-v1"):
        IndexManager(cast(Engine, Overtaken(engine)), "notes", PARAMS).reindex()
    assert engine.alias_targets("notes") == ["notes-v3"]
    assert not engine.index_exists("notes-v2")


class InterruptedWhileAnotherCopies:
    """The embedded engine, except that as the reindex copies, a second one starts (it builds the next version)
    and then the first is interrupted (Ctrl-C)."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        body = IndexManager(self._engine, "notes", PARAMS).body_carrying_model(source)
        self._engine.create_index("notes-v3", body)
        raise KeyboardInterrupt


def test_a_failed_reindex_keeps_the_block_another_reindex_copies_under(engine: EmbeddedEngine, tmp_path: Path) -> None:
    # Lifting it would let writes land in notes-v1 after the second copy passed them, lost when the alias moves.
    run_ingest(engine, tmp_path, records("a"))
    with pytest.raises(KeyboardInterrupt):
        IndexManager(cast(Engine, InterruptedWhileAnotherCopies(engine)), "notes", PARAMS).reindex()
    assert not engine.index_exists("notes-v2")
    assert write_blocked(engine.get_index_settings("notes-v1"))
