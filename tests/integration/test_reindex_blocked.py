"""A server-side copy into a version that refuses writes, and a copy whose cancel the engine does not confirm, on the
real engines.

OpenSearch 3.6 retries each write a block refuses with status 429 (``index.blocks.read_only_allow_delete``, which
the engine sets when a node's disk passes the flood-stage watermark) for about a minute; a copy cancelled meanwhile
was seen never to end, its cancel unanswered, until the node restarted. So the copy is not started into such an
index, and a cancel that is not confirmed is said, naming the task."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from esbridge.config import Settings
from esbridge.engines import Engine, paging
from esbridge.engines.blocks import write_blocked
from esbridge.errors import EngineTimeout, IndexWriteBlocked, ReindexTaskRunning
from tests.integration.engines import require_feature
from tests.integration.test_index_lifecycle import DuringTheCopy, chunk, manager
from tests.integration.test_reindex_interrupts import _copying_into

FLOOD_STAGE_BLOCK = "index.blocks.read_only_allow_delete"


def put_settings(url: str, index: str, settings: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{url}/{index}/_settings",
        data=json.dumps(settings).encode(),
        method="PUT",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer)["acknowledged"]


def test_a_copy_into_an_index_a_block_refuses_is_not_started(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    url = str(engine_settings.url)
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"n{n}#0") for n in range(5)]).failed
    engine.refresh(alias)
    dest = f"{alias}-blocked"
    engine.create_index(dest, manager(engine, alias).wanted_body())
    put_settings(url, dest, {FLOOD_STAGE_BLOCK: True})

    with pytest.raises(IndexWriteBlocked) as refused:
        engine.reindex(f"{alias}-v1", dest)

    message = str(refused.value)
    assert f"{FLOOD_STAGE_BLOCK} is true on {dest}, so the copy into it was not started" in message
    assert "flood-stage watermark" in message
    assert not _copying_into(url, dest)
    assert engine.count(dest) == 0


def test_a_reindex_into_a_version_the_engine_blocked_stops_before_copying_and_undoes_itself(
    engine: Engine, engine_settings: Settings, engine_kind: str, alias: str
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    url = str(engine_settings.url)
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"n{n}#0") for n in range(20)]).failed
    engine.refresh(alias)
    old, new = f"{alias}-v1", f"{alias}-v2"

    during = cast(Engine, DuringTheCopy(engine, lambda: put_settings(url, new, {FLOOD_STAGE_BLOCK: True})))
    started = time.monotonic()
    with pytest.raises(IndexWriteBlocked, match=f"{FLOOD_STAGE_BLOCK} is true on {new}"):
        manager(during, alias).reindex()

    assert time.monotonic() - started < 20, "refused at once, not after the engine's retries"
    assert not _copying_into(url, new)
    assert not engine.index_exists(new)
    assert engine.alias_targets(alias) == [old]
    assert not write_blocked(engine.get_index_settings(old))
    assert engine.count(alias) == 20


def test_a_cancel_the_engine_does_not_confirm_names_the_task_and_keeps_the_version_it_writes_into(
    engine: Engine, engine_settings: Settings, engine_kind: str, alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    url = str(engine_settings.url)
    old, new, client = _versions_of_1500(engine, alias)
    start, cancel = client.reindex, client.tasks.cancel

    def throttled(*args: object, **kwargs: object) -> Any:
        return start(*args, **kwargs, requests_per_second=5)

    def stalled(*args: object, **kwargs: object) -> None:
        raise EngineTimeout("the server's task made no progress for 2s", url=url, operation="reindex", index=new)

    def unanswered(*args: object, **kwargs: object) -> None:
        raise _client_timeout(engine_kind)  # the cancel's answer did not come in time

    monkeypatch.setattr(client, "reindex", throttled)
    monkeypatch.setattr(paging, "wait_for_task", stalled)
    monkeypatch.setattr(client.tasks, "cancel", unanswered)
    with pytest.raises(ReindexTaskRunning) as left:
        manager(engine, alias).reindex()
    monkeypatch.undo()

    task = left.value.task_id
    message = str(left.value)
    assert f"cancelling the server's reindex task {task} was then not confirmed" in message
    assert f"the copy into {new} may still be running: stop it with `POST _tasks/{task}/_cancel`" in message
    assert f"{new} was kept, not deleted, as the task may still write into it" in message
    try:
        assert _copying_into(url, new), "the task the message names is still copying"
        assert engine.index_exists(new)
        assert engine.alias_targets(alias) == [old]
        assert not write_blocked(engine.get_index_settings(old))
    finally:
        cancel(task_id=task, wait_for_completion=True)
    assert not _copying_into(url, new)


def test_a_copy_whose_writes_a_block_refuses_is_not_cancelled_but_named_and_its_version_kept(
    engine: Engine, engine_settings: Settings, engine_kind: str, alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    url = str(engine_settings.url)
    old, new, client = _versions_of_1500(engine, alias)
    start = client.reindex

    def blocked_as_it_starts(*args: object, **kwargs: object) -> Any:
        # The disk passes the flood-stage watermark as the copy starts; throttled, the second batch comes later.
        task = start(*args, **kwargs, requests_per_second=500)
        put_settings(url, new, {FLOOD_STAGE_BLOCK: True})
        return task

    def stalled_once_retrying(poll: Callable[[], Mapping[str, Any]], **kwargs: object) -> None:
        deadline = time.monotonic() + 20
        while not _task(poll())["status"]["retries"]["bulk"] and time.monotonic() < deadline:
            time.sleep(0.2)
        raise EngineTimeout("the server's task made no progress for 2s", url=url, operation="reindex", index=new)

    monkeypatch.setattr(client, "reindex", blocked_as_it_starts)
    monkeypatch.setattr(paging, "wait_for_task", stalled_once_retrying)
    with pytest.raises(ReindexTaskRunning) as left:
        manager(engine, alias).reindex()
    monkeypatch.undo()

    task = left.value.task_id
    assert f"reindex task {task} was not cancelled, as {FLOOD_STAGE_BLOCK} is true on {new}" in str(left.value)
    assert f"{new} was kept, not deleted, as the task may still write into it" in str(left.value)
    try:
        status = client.tasks.get(task_id=task)
        assert not status["completed"] and not _task(status)["cancelled"], "the task is left to give up by itself"
        assert _task(status)["status"]["retries"]["bulk"] > 0
        assert engine.index_exists(new)
        assert engine.alias_targets(alias) == [old]
        assert not write_blocked(engine.get_index_settings(old))
    finally:
        # Lifted, the block lets the task copy on to its end, without the cancel that may never end.
        put_settings(url, new, {FLOOD_STAGE_BLOCK: None})
        deadline = time.monotonic() + 30
        while _copying_into(url, new) and time.monotonic() < deadline:
            time.sleep(0.5)
    assert not _copying_into(url, new)
    assert engine.count(new) == 1500


def _task(status: Mapping[str, Any]) -> Mapping[str, Any]:
    task: Mapping[str, Any] = status["task"]
    return task


def _client_timeout(engine_kind: str) -> Exception:
    """What the engine's client library raises when a request's answer does not come in time."""
    if engine_kind == "opensearch":
        import opensearchpy

        return opensearchpy.ConnectionTimeout("TIMEOUT", "read timed out", None)
    import elastic_transport

    return elastic_transport.ConnectionTimeout("read timed out")


def _versions_of_1500(engine: Engine, alias: str) -> tuple[str, str, Any]:
    """The alias's first version holding 1500 chunks, more than one batch of a reindex task (1000 documents), so that
    a throttled copy is still running at its second; the names of it and of the next version, and the client."""
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"n{n}#0") for n in range(1500)]).failed
    engine.refresh(alias)
    return f"{alias}-v1", f"{alias}-v2", cast(Any, engine)._client
