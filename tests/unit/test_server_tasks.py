"""Waiting for a server task (``_reindex`` run with ``wait_for_completion=false``): its answer, or its error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.engines import paging
from esbridge.engines.paging import wait_for_task
from esbridge.errors import EngineResponseError, EngineTimeout


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
    paging.cancel_duplicates(listing, "a:1", "notes-v2", cancelled.append)
    assert cancelled == ["a:2", "b:1"]


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
