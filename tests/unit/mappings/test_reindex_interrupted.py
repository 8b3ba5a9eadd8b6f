"""`esbridge index reindex` stopped by Ctrl-C says what it left (where the alias points, what became of the new
version and of the old one's write block, what to run next), and what it says is what the engine holds; a swap
whose answer the interrupt cut off is not undone by deleting the version the alias now points to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main
from esbridge.engines.base import BulkAction
from esbridge.engines.blocks import write_blocked
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

DIMENSION = 4


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data directory with ``notes-v1`` behind ``notes``, holding three chunks."""
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", IndexParameters(dimension=DIMENSION)).create()
        vector = [0.1, 0.2, 0.3, 0.4]
        actions = [BulkAction("index", f"d{n}#0", {"chunk_id": f"d{n}#0", "vector": vector}) for n in range(3)]
        assert not engine.bulk("notes", actions).failed
    finally:
        engine.close()
    return tmp_path / "data"


def reindex(data: Path, *options: str) -> Result:
    env = {"ESBRIDGE_DATA_DIR": str(data), "ESBRIDGE_EMBEDDING__DIMENSION": str(DIMENSION)}
    return CliRunner(env=env).invoke(main, ["index", "reindex", "--engine", "embedded", "--index", "notes", *options])


def ctrl_c(call: Callable[..., Any], *, after: bool = False, nth: int = 1) -> Callable[..., Any]:
    """``call``, except that its ``nth`` call is interrupted: before it does anything, or once it has done its work
    and before its answer is read (``after``)."""
    calls = 0

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls != nth:
            return call(*args, **kwargs)
        if after:
            call(*args, **kwargs)
        raise KeyboardInterrupt

    return interrupted


def state(data: Path) -> tuple[list[str], bool, bool]:
    """Where the alias points, whether notes-v1 is write-blocked, whether notes-v2 exists."""
    engine = EmbeddedEngine(data)
    try:
        blocked = write_blocked(engine.get_index_settings("notes-v1"))
        return engine.alias_targets("notes"), blocked, engine.index_exists("notes-v2")
    finally:
        engine.close()


def said(result: Result) -> str:
    assert result.exit_code == 130, result.output
    return result.stderr.strip().splitlines()[-1]


def test_ctrl_c_during_the_copy_says_nothing_was_changed(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedEngine, "reindex", ctrl_c(EmbeddedEngine.reindex))
    result = reindex(data)
    assert said(result) == (
        "interrupted: nothing was changed: notes still points to notes-v1, which takes writes again, and the "
        "half-built notes-v2 was deleted; run `esbridge index reindex` again to build the new version"
    )
    assert state(data) == (["notes-v1"], False, False)
    monkeypatch.undo()
    again = reindex(data)
    assert again.exit_code == 0, again.output
    assert "copied 3 chunks from notes-v1 to notes-v2" in again.stdout


def test_ctrl_c_as_the_swap_is_answered_keeps_the_version_the_alias_moved_to(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The swap is made; the interrupt only cuts off its answer. Undoing it by deleting notes-v2 would take the alias
    # with it, leaving `notes` behind no index.
    monkeypatch.setattr(EmbeddedEngine, "update_aliases", ctrl_c(EmbeddedEngine.update_aliases, after=True))
    result = reindex(data)
    assert said(result) == (
        "interrupted: the reindex is done: notes points to notes-v2, which holds every chunk and takes writes; "
        "notes-v1 is kept and may still refuse writes (index.blocks.write); nothing writes to it, and "
        "`esbridge index drop --version 1` deletes it"
    )
    assert state(data) == (["notes-v2"], True, True)
    engine = EmbeddedEngine(data)
    try:
        assert engine.count("notes") == 3
    finally:
        engine.close()


def test_ctrl_c_before_the_swap_is_made_leaves_the_alias_where_it_was(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EmbeddedEngine, "update_aliases", ctrl_c(EmbeddedEngine.update_aliases))
    assert said(reindex(data)).startswith("interrupted: nothing was changed: notes still points to notes-v1")
    assert state(data) == (["notes-v1"], False, False)


def test_ctrl_c_while_lifting_the_block_after_the_swap_says_the_reindex_is_done(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first call blocks notes-v1, the second would lift the block once the alias has moved.
    monkeypatch.setattr(EmbeddedEngine, "set_write_block", ctrl_c(EmbeddedEngine.set_write_block, nth=2))
    assert said(reindex(data)).startswith("interrupted: the reindex is done: notes points to notes-v2")
    assert state(data) == (["notes-v2"], True, True)


def test_ctrl_c_while_deleting_the_old_version_says_it_may_be_left(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedEngine, "delete_index", ctrl_c(EmbeddedEngine.delete_index))
    assert said(reindex(data, "--delete-old", "--yes")) == (
        "interrupted: the reindex is done: notes points to notes-v2, which holds every chunk and takes writes; "
        "notes-v1 may not have been deleted: `esbridge index drop --version 1` deletes it"
    )
    assert state(data)[0] == ["notes-v2"]


def test_a_second_ctrl_c_while_undoing_says_what_may_be_left(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedEngine, "reindex", ctrl_c(EmbeddedEngine.reindex))
    monkeypatch.setattr(EmbeddedEngine, "delete_index", ctrl_c(EmbeddedEngine.delete_index))
    assert said(reindex(data)) == (
        "interrupted: notes still points to notes-v1, but the half-built notes-v2 could not be deleted "
        "(KeyboardInterrupt) and notes-v1 may still refuse writes: run `esbridge index reindex` again, which builds "
        "a new, writable version, and `esbridge index drop --version 2` deletes notes-v2"
    )
    assert state(data) == (["notes-v1"], True, True)
    monkeypatch.undo()
    again = reindex(data)  # as said: a new, writable version
    assert again.exit_code == 0, again.output
    engine = EmbeddedEngine(data)
    try:
        assert engine.alias_targets("notes") == ["notes-v3"]
        assert not write_blocked(engine.get_index_settings("notes-v3"))
        assert engine.count("notes") == 3
    finally:
        engine.close()


def test_a_second_ctrl_c_while_asking_whether_another_reindex_copies_says_what_is_left(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the first Ctrl-C the undoing reads the versions (is a later reindex copying notes-v1 under this block?);
    # a second Ctrl-C there must still say what was left, not drop the message and leave both unsaid.
    interrupted = False
    reindex_call, list_indices = EmbeddedEngine.reindex, EmbeddedEngine.list_indices

    def copy(*args: Any, **kwargs: Any) -> Any:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    def listing(*args: Any, **kwargs: Any) -> Any:
        if interrupted:
            raise KeyboardInterrupt
        return list_indices(*args, **kwargs)

    monkeypatch.setattr(EmbeddedEngine, "reindex", copy)
    monkeypatch.setattr(EmbeddedEngine, "list_indices", listing)
    assert said(reindex(data)) == (
        "interrupted: notes still points to notes-v1 and the half-built notes-v2 was deleted, but notes-v1 may "
        "still refuse writes (lifting its write block was stopped: KeyboardInterrupt): run `esbridge index reindex` "
        "again, which builds a new, writable version"
    )
    assert state(data) == (["notes-v1"], True, False)
    monkeypatch.setattr(EmbeddedEngine, "reindex", reindex_call)
    monkeypatch.setattr(EmbeddedEngine, "list_indices", list_indices)
    again = reindex(data)  # as said: a new, writable version
    assert again.exit_code == 0, again.output
