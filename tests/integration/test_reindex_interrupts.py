"""How an interrupted ``esbridge index reindex`` leaves the index, on the real engines."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any, cast

import pytest

from esbridge.config import Settings
from esbridge.engines import Engine, paging
from esbridge.engines.blocks import write_blocked
from esbridge.errors import ReindexInterrupted
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.engines import require_feature
from tests.integration.test_index_lifecycle import DIMENSION, Interrupted, chunk, manager


def test_a_reindex_interrupted_while_the_server_copies_leaves_no_copy_behind(
    engine: Engine, engine_settings: Settings, alias: str, engine_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    manager(engine, alias).create()
    for batch in range(10):
        written = engine.bulk(alias, [chunk(f"b{batch}n{n}#0", title=f"note {n}") for n in range(1000)])
        assert not written.failed
    engine.refresh(alias)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise Interrupted  # Ctrl-C while the server's _reindex task copies

    monkeypatch.setattr(paging, "wait_for_task", interrupted)
    with pytest.raises(ReindexInterrupted, match="nothing was changed"):
        manager(engine, alias).reindex()
    monkeypatch.undo()

    # A task left running writes on into the deleted version, which the engine then re-creates with a dynamic mapping.
    new = f"{alias}-v2"
    deadline = time.monotonic() + 60
    while _copying_into(str(engine_settings.url), new) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not engine.index_exists(new), "the half-built version stays deleted"
    assert engine.alias_targets(alias) == [f"{alias}-v1"]
    assert not write_blocked(engine.get_index_settings(f"{alias}-v1"))


def test_a_reindex_task_the_client_started_twice_is_cancelled_too(
    engine: Engine, engine_settings: Settings, alias: str, engine_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    manager(engine, alias).create()
    for batch in range(10):
        assert not engine.bulk(alias, [chunk(f"b{batch}n{n}#0", title=f"note {n}") for n in range(1000)]).failed
    engine.refresh(alias)
    client = cast(Any, engine)._client
    start = client.reindex

    def started_twice(*args: object, **kwargs: object) -> Any:
        # The first request's answer did not come in time, so the client library sent it again. Throttled, the
        # first task is still copying when the reindex gives up.
        start(*args, **kwargs, requests_per_second=1000)
        time.sleep(2)
        return start(*args, **kwargs)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise Interrupted

    monkeypatch.setattr(client, "reindex", started_twice)
    monkeypatch.setattr(paging, "wait_for_task", interrupted)
    with pytest.raises(ReindexInterrupted, match="nothing was changed"):
        manager(engine, alias).reindex()
    monkeypatch.undo()

    new = f"{alias}-v2"
    deadline = time.monotonic() + 60
    while _copying_into(str(engine_settings.url), new) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not engine.index_exists(new), "no task wrote on into the deleted version"
    assert engine.alias_targets(alias) == [f"{alias}-v1"]


def test_a_reindex_cancels_another_task_copying_into_its_destination_and_waits_for_it_to_end(
    engine: Engine, engine_settings: Settings, alias: str, engine_kind: str
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    url = str(engine_settings.url)
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"n{n}#0") for n in range(1500)]).failed
    engine.refresh(alias)
    dest = f"{alias}-copy"
    engine.create_index(dest, manager(engine, alias).wanted_body())
    # Throttled, the first task copies one batch of 1000 documents, then waits 200 s before the next.
    body = json.dumps({"source": {"index": f"{alias}-v1"}, "dest": {"index": dest}}).encode()
    started = urllib.request.Request(
        f"{url}/_reindex?wait_for_completion=false&requests_per_second=5",
        data=body,
        method="POST",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(started, timeout=30) as answer:
        first = json.load(answer)["task"]
    deadline = time.monotonic() + 30
    while _task_of(url, first)["status"]["created"] < 1000 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _task_of(url, first)["status"]["created"] == 1000, "the first task waits before its second batch"

    began = time.monotonic()
    assert engine.reindex(f"{alias}-v1", dest) == 1500
    assert time.monotonic() - began < 60, "the first task was cancelled, not waited out"

    with urllib.request.urlopen(f"{url}/_tasks/{first}", timeout=30) as answer:
        status = json.load(answer)
    assert status["completed"], "the other task has ended"
    assert status["task"]["cancelled"]
    assert status["task"]["status"]["created"] == 1000, "cancelled in its wait, before its second batch"
    assert not _copying_into(url, dest)
    engine.refresh(dest)
    assert engine.count(dest) == 1500


def _task_of(url: str, task: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/_tasks/{task}", timeout=30) as answer:
        found: dict[str, Any] = json.load(answer)["task"]
    return found


def _copying_into(url: str, index: str) -> bool:
    """Whether a reindex task on the server still writes into ``index``."""
    with urllib.request.urlopen(f"{url}/_tasks?actions=*reindex&detailed=true", timeout=30) as answer:
        nodes = json.load(answer)["nodes"].values()
    return any(f"[{index}]" in task.get("description", "") for node in nodes for task in node["tasks"].values())


class SwapAnswerLost:
    """The live engine, except that Ctrl-C arrives once the alias swap is made, before its answer is read."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        self._engine.update_aliases(actions)
        raise KeyboardInterrupt


def test_a_reindex_interrupted_as_its_swap_is_answered_keeps_the_new_version_and_says_so(
    engine: Engine, alias: str
) -> None:
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"old{n}#0") for n in range(3)]).failed
    engine.refresh(alias)

    with pytest.raises(ReindexInterrupted, match=rf"the reindex is done: {alias} points to {alias}-v2"):
        IndexManager(cast(Engine, SwapAnswerLost(engine)), alias, IndexParameters(dimension=DIMENSION)).reindex()

    assert engine.alias_targets(alias) == [f"{alias}-v2"], "the version the alias moved to is not deleted"
    assert engine.count(alias) == 3
    assert write_blocked(engine.get_index_settings(f"{alias}-v1")), "as said: it may still refuse writes"
