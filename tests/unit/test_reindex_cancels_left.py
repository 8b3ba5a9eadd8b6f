"""What a reindex names when cancels fail: every task it could not confirm cancelled, its own and each duplicate a
client retry started (``ServerReindex.reindex``, ``paging.cancel_duplicates``), each with the request that stops it,
so that an operator can stop by hand every copy still writing into the destination."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.engines import paging
from esbridge.errors import ReindexTaskRunning
from tests.unit.test_server_tasks import CANCELLED, Tasks

LOST = {"node_failures": [{"type": "failed_node_exception", "caused_by": {"type": "node_disconnected_exception"}}]}
INTO = {"description": "reindex from [notes-v1] to [notes-v2]"}


class Retried(Tasks):
    """A ``_reindex`` the client sent three times: two duplicates, node1:1 and node1:3, beside its own node1:2."""

    def _reindex_tasks(self) -> Mapping[str, Any]:
        return {"nodes": {"node1": {"tasks": {"node1:1": INTO, "node1:2": INTO, "node1:3": INTO}}}}


def stop(task: str) -> str:
    return f"stop it with `POST _tasks/{task}/_cancel`"


def test_when_its_own_cancel_fails_after_the_duplicate_s_both_tasks_are_named_with_how_to_stop_them() -> None:
    tasks = Tasks({"node1:1": LOST, "node1:2": LOST})
    with pytest.raises(ReindexTaskRunning) as left:
        tasks.reindex("notes-v1", "notes-v2")
    said = str(left.value)
    assert "another reindex task, node1:1, was copying into notes-v2" in said
    assert "cancelling the server's reindex task node1:2 was then not confirmed" in said
    assert stop("node1:1") in said and stop("node1:2") in said
    assert left.value.task_id == "node1:2"


def test_when_every_cancel_fails_each_task_left_running_is_named_with_how_to_stop_it() -> None:
    tasks = Retried({"node1:1": LOST, "node1:2": LOST, "node1:3": LOST})
    with pytest.raises(ReindexTaskRunning) as left:
        tasks.reindex("notes-v1", "notes-v2")
    assert tasks.cancelled == ["node1:1", "node1:3", "node1:2"], "every task is asked to stop"
    said = str(left.value)
    for task in ("node1:1", "node1:3"):
        assert f"another reindex task, {task}, was copying into notes-v2" in said, task
    assert "cancelling the server's reindex task node1:2 was then not confirmed" in said
    assert all(stop(task) in said for task in ("node1:1", "node1:2", "node1:3")), said
    assert left.value.task_id == "node1:2" and not left.value.interrupted


def test_a_duplicate_after_one_whose_cancel_failed_is_still_cancelled() -> None:
    tasks = Retried({"node1:1": LOST, "node1:2": CANCELLED, "node1:3": CANCELLED})
    with pytest.raises(ReindexTaskRunning) as left:
        tasks.reindex("notes-v1", "notes-v2")
    assert tasks.cancelled == ["node1:1", "node1:3", "node1:2"], "no copy is left running unasked"
    assert left.value.task_id == "node1:1"
    assert stop("node1:1") in str(left.value) and "node1:3" not in str(left.value), "node1:3 was cancelled"


def duplicates_cancelled(send: Any, block: str | None = None) -> ReindexTaskRunning:
    listing = {"nodes": {"node1": {"tasks": {"node1:41": INTO, "node1:42": INTO, "node2:7": INTO}}}}
    with pytest.raises(ReindexTaskRunning) as left:
        paging.cancel_duplicates(listing, "node1:41", "notes-v2", send, refusing_block=lambda: block, url="http://e")
    return left.value


def test_under_the_flood_stage_block_each_duplicate_is_named_not_cancelled() -> None:
    def never(task: str) -> Mapping[str, Any]:
        raise AssertionError("no cancel is sent that may never end")

    left = duplicates_cancelled(never, block="index.blocks.read_only_allow_delete")
    for task in ("node1:42", "node2:7"):
        assert f"another reindex task, {task}, was copying into notes-v2" in str(left), task
        assert f"`GET _tasks/{task}` says when" in str(left), task
    assert left.task_id == "node1:42"


def test_ctrl_c_while_cancelling_a_duplicate_names_the_ones_it_left_unasked() -> None:
    asked: list[str] = []

    def interrupted(task: str) -> Mapping[str, Any]:
        asked.append(task)
        raise KeyboardInterrupt

    left = duplicates_cancelled(interrupted)
    assert asked == ["node1:42"], "after Ctrl-C no further cancel is sent"
    assert left.interrupted and left.task_id == "node1:42"
    assert "cancelling it was not confirmed (interrupted)" in str(left)
    assert f"it was not cancelled, as Ctrl-C stopped the cancels: {stop('node2:7')}" in str(left)
