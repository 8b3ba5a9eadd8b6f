"""A reindex whose server task was not confirmed cancelled keeps the version the task may still write into, lets the
old version take writes again, and says so, naming the task; Ctrl-C is still said as an interrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ReindexTaskRunning
from tests.unit.mappings.test_reindex_interrupted import data, reindex, state

__all__ = ["data"]

LEFT = (
    "cancelling the server's reindex task node1:42 was then not confirmed (cancel the reindex task failed: no answer "
    "in time), so the copy into notes-v2 may still be running: stop it with `POST _tasks/node1:42/_cancel` "
    "(`GET _tasks/node1:42` says whether it has ended)"
)
KEPT = (
    "notes still points to notes-v1; notes-v2 was kept, not deleted, as the task may still write into it: once the "
    "task has ended, `esbridge index drop --version 2` deletes it; notes-v1 takes writes again"
)


def task_left_running(*, interrupted: bool) -> object:
    """``EmbeddedEngine.reindex`` answering as an adapter does when the cancel of its server task was not confirmed."""

    def reindex(engine: EmbeddedEngine, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        stopped = "stopped by Ctrl-C" if interrupted else "the server's task made no progress for 2s"
        raise ReindexTaskRunning(
            f"{stopped}; {LEFT}", task_id="node1:42", interrupted=interrupted, url=engine.url, operation="reindex"
        )

    return reindex


def test_a_task_left_running_keeps_its_version_and_is_named(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EmbeddedEngine, "reindex", task_left_running(interrupted=False))
    result = reindex(data)
    assert result.exit_code == 1, result.output
    said = result.stderr.strip().splitlines()[-1]
    assert said.startswith("Error: reindex failed on embedded:")
    assert said.endswith(f"the server's task made no progress for 2s; {LEFT}; {KEPT}")
    assert state(data) == (["notes-v1"], False, True)


def test_ctrl_c_with_a_task_left_running_is_an_interrupt_that_says_so(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EmbeddedEngine, "reindex", task_left_running(interrupted=True))
    result = reindex(data)
    assert result.exit_code == 130, result.output
    assert result.stderr.strip().splitlines()[-1] == f"interrupted: stopped by Ctrl-C; {LEFT}; {KEPT}"
    assert state(data) == (["notes-v1"], False, True)
