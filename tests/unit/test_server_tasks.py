"""Waiting for a server task (``_reindex`` run with ``wait_for_completion=false``): its answer, or its error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.engines.paging import wait_for_task
from esbridge.errors import EngineResponseError


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
