"""Waiting for a server task (``_reindex`` run with ``wait_for_completion=false``): its answer, or its error."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from esbridge.engines import paging
from esbridge.engines.paging import wait_for_task
from esbridge.engines.server_reindex import ServerReindex
from esbridge.errors import EngineResponseError, EngineTimeout, IndexWriteBlocked, ReindexTaskRunning


def polls(*answers: Mapping[str, Any]) -> Any:
    remaining = list(answers)
    return lambda: remaining.pop(0)


def wait(*answers: Mapping[str, Any]) -> Mapping[str, Any]:
    return wait_for_task(polls(*answers), timeout_s=5, url="http://e", operation="reindex", index="notes-v2")


def test_the_response_of_a_completed_task_is_returned() -> None:
    running = {"completed": False, "task": {"status": {"created": 10}}}
    assert wait(running, {"completed": True, "response": {"created": 20, "failures": []}}) == {
        "created": 20,
        "failures": [],
    }


def test_a_task_that_ended_in_an_error_raises_it_naming_the_cause() -> None:
    # The shape OpenSearch and Elasticsearch give a task whose source index was deleted while it copied.
    failed = {
        "completed": True,
        "error": {
            "type": "index_not_found_exception",
            "reason": "no such index [notes-v1]",
            "index": "notes-v1",
        },
    }
    with pytest.raises(
        EngineResponseError, match=r"task failed: index_not_found_exception: no such index \[notes-v1\]"
    ):
        wait({"completed": False}, failed)


class Clock:
    """``time`` for ``wait_for_task``: each sleep moves the clock on by ten minutes."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += 600


def running(created: int) -> Mapping[str, Any]:
    return {"completed": False, "task": {"status": {"total": 5_000_000, "created": created}}}


def test_a_task_that_keeps_copying_is_waited_for_past_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "time", Clock())
    # Five hours of copying, 1 million documents an hour, polled every ten minutes.
    answers = [running(created) for created in range(0, 5_000_000, 1_000_000 // 6)]
    done = {"completed": True, "response": {"created": 5_000_000, "failures": []}}
    assert wait_for_task(polls(*answers, done), timeout_s=3600, url="http://e", operation="reindex", index="n-v2") == {
        "created": 5_000_000,
        "failures": [],
    }


def test_a_task_that_stops_progressing_times_out_naming_how_far_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "time", Clock())
    answers = [running(1_000), running(2_000), *[running(3_000)] * 10]
    with pytest.raises(EngineTimeout, match=r"no progress for 3600s \(3000 of 5000000 documents done\)"):
        wait_for_task(polls(*answers), timeout_s=3600, url="http://e", operation="reindex", index="n-v2")


def test_only_the_other_tasks_copying_into_the_new_version_are_cancelled() -> None:
    def task(into: str) -> Mapping[str, Any]:
        return {"description": f"reindex from [notes-v1] to [{into}]"}

    listing = {
        "nodes": {
            "a": {"tasks": {"a:1": task("notes-v2"), "a:2": task("notes-v2"), "a:3": task("other-v2")}},
            "b": {"tasks": {"b:1": task("notes-v2"), "b:2": {"description": "reindex from [notes-v2] to [x]"}}},
        }
    }
    cancelled: list[str] = []

    def cancel(task: str) -> Mapping[str, Any]:
        cancelled.append(task)
        return CANCELLED

    paging.cancel_duplicates(listing, "a:1", "notes-v2", cancel, refusing_block=lambda: None, url="http://e")
    assert cancelled == ["a:2", "b:1"]


def duplicate_cancelled(
    answer: Mapping[str, Any] | BaseException, block: Callable[[], str | None] = lambda: None
) -> None:
    """A reindex into notes-v2 (node1:41) finds a second one (node1:42), whose cancel gets ``answer``; ``block``
    reads the flood-stage block on notes-v2."""

    def send(task: str) -> Mapping[str, Any]:
        assert task == "node1:42"
        if isinstance(answer, BaseException):
            raise answer
        return answer

    into = {"description": "reindex from [notes-v1] to [notes-v2]"}
    listing = {"nodes": {"node1": {"tasks": {"node1:41": into, "node1:42": into}}}}
    paging.cancel_duplicates(listing, "node1:41", "notes-v2", send, refusing_block=block, url="http://e")


def test_a_duplicate_whose_cancel_a_node_failed_is_named_with_how_to_stop_it() -> None:
    failed = {
        "node_failures": [
            {
                "type": "failed_node_exception",
                "caused_by": {"type": "node_disconnected_exception", "reason": "node1 disconnected"},
            }
        ]
    }
    with pytest.raises(ReindexTaskRunning) as left:
        duplicate_cancelled(failed)
    assert left.value.task_id == "node1:42"
    assert not left.value.interrupted
    assert str(left.value) == (
        "reindex failed on http://e, index 'notes-v2': another reindex task, node1:42, was copying into notes-v2 (a "
        "client retry can start one twice); cancelling it was not confirmed (the engine answered: "
        "node_disconnected_exception: node1 disconnected), so it may still be writing into notes-v2: stop it with "
        "`POST _tasks/node1:42/_cancel` (`GET _tasks/node1:42` says whether it has ended)"
    )


def test_a_duplicate_whose_cancel_got_no_answer_is_named() -> None:
    with pytest.raises(ReindexTaskRunning, match=r"node1:42, was copying .* not confirmed \(cancel the reindex task "):
        duplicate_cancelled(EngineTimeout("no answer in time", url="http://e", operation="cancel the reindex task"))


def test_a_duplicate_that_has_ended_before_its_cancel_is_not_an_error() -> None:
    duplicate_cancelled(ENDED)


def test_a_duplicate_whose_writes_the_flood_stage_block_refuses_is_named_not_cancelled() -> None:
    never = AssertionError("a task cancelled while the engine retries the writes a block refuses may never end")
    with pytest.raises(ReindexTaskRunning) as left:
        duplicate_cancelled(never, lambda: "index.blocks.read_only_allow_delete")
    assert left.value.task_id == "node1:42"
    assert not left.value.interrupted
    assert str(left.value) == (
        "reindex failed on http://e, index 'notes-v2': another reindex task, node1:42, was copying into notes-v2 (a "
        "client retry can start one twice); it was not cancelled, as index.blocks.read_only_allow_delete is true on "
        "notes-v2 and a copy cancelled while the engine retries the writes a block refuses may never end: the task "
        "gives up by itself once those retries are spent (about a minute; `GET _tasks/node1:42` says when), or "
        "copies on if the block is lifted first (`POST _tasks/node1:42/_cancel` stops it then)"
    )


def test_a_duplicate_is_cancelled_when_the_block_cannot_be_read() -> None:
    def unreadable() -> str | None:
        raise EngineTimeout("no answer in time", url="http://e", operation="get index settings")

    duplicate_cancelled(CANCELLED, unreadable)


def test_the_block_is_not_read_when_there_is_no_duplicate() -> None:
    def unread() -> str | None:
        raise AssertionError("a reindex without a duplicate reads no settings to cancel it")

    into = {"description": "reindex from [notes-v1] to [notes-v2]"}
    listing = {"nodes": {"node1": {"tasks": {"node1:41": into}}}}
    paging.cancel_duplicates(listing, "node1:41", "notes-v2", lambda task: CANCELLED, refusing_block=unread, url="")


def test_ctrl_c_while_cancelling_a_duplicate_is_said_as_an_interrupt_to_the_end() -> None:
    with pytest.raises(ReindexTaskRunning, match=r"not confirmed \(interrupted\)") as left:
        duplicate_cancelled(KeyboardInterrupt())
    assert left.value.interrupted
    # The reindex then cancels its own task, which that error stopped waiting for.
    with pytest.raises(ReindexTaskRunning) as own:
        cancel(EngineTimeout("no answer in time", url="http://e", operation="cancel"), cause=left.value)
    assert own.value.task_id == "node1:42"
    assert own.value.interrupted


def test_a_stall_names_the_setting_that_bounds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "time", Clock())
    answers = [running(1_000), *[running(1_000)] * 3]
    with pytest.raises(EngineTimeout) as stalled:
        wait_for_task(
            polls(*answers),
            timeout_s=900,
            url="http://e",
            operation="reindex",
            index="n-v2",
            setting=paging.STALL_SETTING,
        )
    assert str(stalled.value).startswith(
        "reindex failed on http://e, index 'n-v2': the server's task made no progress for 900s "
        "(1000 of 5000000 documents done); raise reindex_stall_timeout_s (ESBRIDGE_REINDEX_STALL_TIMEOUT_S) to wait "
        "longer"
    )


def cancel(
    answer: Mapping[str, Any] | BaseException, cause: BaseException | None = None, block: str | None = None
) -> None:
    def send() -> Mapping[str, Any]:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    stopped = cause or EngineTimeout("the server's task made no progress for 2s", url="http://e", operation="reindex")
    paging.cancel_task(send, "node1:42", refusing_block=lambda: block, cause=stopped, url="http://e", index="notes-v2")


CANCELLED = {"nodes": {"node1": {"tasks": {"node1:42": {"action": "indices:data/write/reindex", "cancelled": True}}}}}
# The answer OpenSearch and Elasticsearch give the cancel of a task that has ended already.
ENDED = {
    "nodes": {},
    "node_failures": [
        {
            "type": "failed_node_exception",
            "reason": "Failed node [node1]",
            "caused_by": {"type": "resource_not_found_exception", "reason": "task [node1:42] is not found"},
        }
    ],
}


@pytest.mark.parametrize("answer", [CANCELLED, ENDED], ids=["cancelled", "ended before"])
def test_a_task_the_engine_says_has_ended_needs_no_more_words(answer: Mapping[str, Any]) -> None:
    cancel(answer)


def test_a_cancel_without_an_answer_names_the_task_what_stopped_the_wait_and_how_to_stop_it() -> None:
    with pytest.raises(ReindexTaskRunning) as left:
        cancel(EngineTimeout("no answer in time", url="http://e", operation="cancel the reindex task"))
    assert left.value.task_id == "node1:42"
    assert not left.value.interrupted
    assert str(left.value) == (
        "reindex failed on http://e, index 'notes-v2': the server's task made no progress for 2s; cancelling the "
        "server's reindex task node1:42 was then not confirmed (cancel the reindex task failed on http://e: no "
        "answer in time), so the copy into notes-v2 may still be running: stop it with "
        "`POST _tasks/node1:42/_cancel` (`GET _tasks/node1:42` says whether it has ended)"
    )


def test_a_cancel_a_node_failed_is_not_taken_for_done() -> None:
    failed = {
        "node_failures": [
            {
                "type": "failed_node_exception",
                "caused_by": {"type": "node_disconnected_exception", "reason": "node1 disconnected"},
            }
        ]
    }
    with pytest.raises(
        ReindexTaskRunning, match=r"not confirmed \(the engine answered: node_disconnected_exception: node1 "
    ):
        cancel(failed)


def test_ctrl_c_while_cancelling_after_ctrl_c_is_said_as_an_interrupt() -> None:
    with pytest.raises(ReindexTaskRunning, match=r"^reindex failed .*: stopped by Ctrl-C; .* \(interrupted\)") as left:
        cancel(KeyboardInterrupt(), cause=KeyboardInterrupt())
    assert left.value.interrupted


def test_a_task_whose_writes_a_block_refuses_is_left_to_give_up_by_itself_and_said() -> None:
    never = AssertionError("a task cancelled while the engine retries the writes a block refuses may never end")
    with pytest.raises(ReindexTaskRunning) as left:
        cancel(never, block="index.blocks.read_only_allow_delete")
    assert left.value.task_id == "node1:42"
    assert str(left.value) == (
        "reindex failed on http://e, index 'notes-v2': the server's task made no progress for 2s; the server's "
        "reindex task node1:42 was not cancelled, as index.blocks.read_only_allow_delete is true on notes-v2 and a "
        "copy cancelled while the engine retries the writes a block refuses may never end: the task gives up by "
        "itself once those retries are spent (about a minute; `GET _tasks/node1:42` says when), or copies on if the "
        "block is lifted first (`POST _tasks/node1:42/_cancel` stops it then)"
    )


@pytest.mark.parametrize(
    "settings", [{"blocks": {"read_only_allow_delete": "true"}}, {"blocks.read_only_allow_delete": "true"}]
)
def test_a_copy_into_an_index_with_the_flood_stage_block_is_refused_naming_it(settings: Mapping[str, Any]) -> None:
    with pytest.raises(IndexWriteBlocked) as refused:
        paging.refuse_a_blocked_dest(settings, url="http://e", index="notes-v2")
    assert str(refused.value).startswith(
        "reindex failed on http://e, index 'notes-v2': index.blocks.read_only_allow_delete is true on notes-v2, so "
        "the copy into it was not started"
    )
    assert "free disk space, then run `esbridge index reindex` again" in str(refused.value)


@pytest.mark.parametrize(
    "settings",
    [{"blocks": {"read_only_allow_delete": "false"}, "number_of_shards": "1"}, {"blocks": {"write": "true"}}],
    ids=["no block", "a block whose refusals end the copy at once"],
)
def test_a_copy_into_an_index_without_the_flood_stage_block_goes_ahead(settings: Mapping[str, Any]) -> None:
    paging.refuse_a_blocked_dest(settings, url="http://e", index="n")


class Tasks(ServerReindex):
    """The task calls of an adapter whose ``_reindex`` started two tasks into notes-v2, the second one ``own``."""

    def __init__(self, cancels: Mapping[str, Mapping[str, Any]]) -> None:
        self._url, self._reindex_stall_s = "http://e", 5.0
        self.cancels, self.cancelled = cancels, list[str]()

    @contextmanager
    def _call(self, operation: str, index: str | None = None) -> Iterator[None]:
        yield

    def get_index_settings(self, index: str) -> dict[str, Any]:
        return {"number_of_shards": "1"}

    def _start_reindex(self, source: str, dest: str) -> str:
        return "node1:2"

    def _reindex_tasks(self) -> Mapping[str, Any]:
        into = {"description": "reindex from [notes-v1] to [notes-v2]"}
        return {"nodes": {"node1": {"tasks": {"node1:1": into, "node1:2": into}}}}

    def _task_status(self, task: str) -> Mapping[str, Any]:
        return {"completed": True, "response": {"total": 3, "created": 3, "updated": 0, "failures": []}}

    def _cancel_and_wait(self, task: str) -> Mapping[str, Any]:
        self.cancelled.append(task)
        return self.cancels[task]


def test_a_reindex_whose_duplicate_stays_unconfirmed_cancels_its_own_copy_and_names_the_duplicate() -> None:
    lost = {"type": "failed_node_exception", "caused_by": {"type": "node_disconnected_exception"}}
    tasks = Tasks({"node1:1": {"node_failures": [lost]}, "node1:2": CANCELLED})
    with pytest.raises(ReindexTaskRunning, match=r"another reindex task, node1:1, was copying into notes-v2") as left:
        tasks.reindex("notes-v1", "notes-v2")
    assert left.value.task_id == "node1:1"
    assert tasks.cancelled == ["node1:1", "node1:2"], "the copy started is not left beside the one still running"


class BlockedMeanwhile(Tasks):
    """Tasks whose destination gets the flood-stage block once the copy has started."""

    def __init__(self) -> None:
        super().__init__({})
        self.reads = 0

    def get_index_settings(self, index: str) -> dict[str, Any]:
        self.reads += 1
        return {"blocks": {"read_only_allow_delete": "true"}} if self.reads > 1 else {"number_of_shards": "1"}


def test_a_reindex_whose_duplicate_meets_the_flood_stage_block_cancels_neither_and_names_both() -> None:
    tasks = BlockedMeanwhile()
    with pytest.raises(ReindexTaskRunning) as left:
        tasks.reindex("notes-v1", "notes-v2")
    assert tasks.cancelled == [], "no cancel is sent that may never end"
    assert str(left.value).startswith(
        "reindex failed on http://e, index 'notes-v2': another reindex task, node1:1, was copying into notes-v2 (a "
        "client retry can start one twice); it was not cancelled, as index.blocks.read_only_allow_delete is true"
    )
    assert "the server's reindex task node1:2 was not cancelled, as index.blocks.read_only_allow_delete" in str(
        left.value
    )


def test_a_reindex_whose_duplicate_ended_copies_on() -> None:
    tasks = Tasks({"node1:1": CANCELLED})
    assert tasks.reindex("notes-v1", "notes-v2") == 3
    assert tasks.cancelled == ["node1:1"]
