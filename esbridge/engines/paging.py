"""Algorithms shared by the adapters that only need the adapter's own ``search`` and task polling."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from esbridge.engines.base import Hit, SearchResult
from esbridge.engines.blocks import flood_stage_block
from esbridge.engines.errors import error_type_and_reason
from esbridge.errors import (
    EngineError,
    EngineResponseError,
    EngineTimeout,
    EsbridgeError,
    IndexNotFound,
    IndexUnavailable,
    IndexWriteBlocked,
    ReindexTaskRunning,
)


class ScanBySearch:
    """``Engine.scan`` for any adapter whose ``search`` takes sort and ``search_after``."""

    def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        raise NotImplementedError

    @property
    def url(self) -> str:
        raise NotImplementedError

    def scan(
        self, index: str, query: Mapping[str, Any], fields: Sequence[str], *, sort_field: str, page_size: int = 1000
    ) -> Iterator[Hit]:
        for page in pages(lambda body: self.search(index, body), query, fields, sort_field=sort_field, size=page_size):
            if page.partial:
                # Callers read every document (export, copy, change detection): part of them would be taken
                # for all of them.
                raise IndexUnavailable(
                    f"{page.partial}; stopped rather than read only part of the index",
                    url=self.url,
                    operation="scan",
                    index=index,
                )
            yield from page.hits


def pages(
    search: Callable[[Mapping[str, Any]], SearchResult],
    query: Mapping[str, Any],
    fields: Sequence[str],
    *,
    sort_field: str,
    size: int,
) -> Iterator[SearchResult]:
    """The answers paging through every hit of ``query`` with ``search_after`` on a unique keyword ``sort_field``."""
    after: list[Any] | None = None
    while True:
        body: dict[str, Any] = {
            "size": size,
            "query": dict(query),
            "_source": list(fields),
            "sort": [{sort_field: "asc"}],
            "track_total_hits": False,
        }
        if after is not None:
            body["search_after"] = after
        page = search(body)
        if not page.hits and not page.partial:
            return
        yield page
        if len(page.hits) < size:
            return
        after = page.raw["hits"]["hits"][-1]["sort"]


STALL_SETTING = "reindex_stall_timeout_s"
"""The setting that bounds how long a server-side reindex may go without progress."""


def wait_for_task(
    poll: Callable[[], Mapping[str, Any]],
    *,
    timeout_s: float,
    url: str,
    operation: str,
    index: str,
    setting: str | None = None,
) -> Mapping[str, Any]:
    """Poll a server task until it completes; its ``response`` (or an empty mapping) is returned. A task that ended
    in an error (its ``error``: the source gone, a search that failed) raises it. ``timeout_s`` bounds the time
    without progress, not the task's whole run: copying millions of documents takes hours. ``setting``: the
    setting ``timeout_s`` comes from, named in the error."""
    deadline = time.monotonic() + timeout_s
    delay = 0.2
    progress: tuple[int, ...] | None = None
    while True:
        status = poll()
        if status.get("completed"):
            if status.get("error"):
                kind, reason = error_type_and_reason({"error": status["error"]})
                shown = f"{kind}: {reason}" if kind and kind != reason else reason
                raise EngineResponseError(
                    f"the server's task failed: {shown}", url=url, operation=operation, index=index
                )
            response: Mapping[str, Any] = status.get("response") or {}
            return response
        counts = _task_progress(status)
        if counts != progress:
            progress, deadline = counts, time.monotonic() + timeout_s
        elif time.monotonic() > deadline:
            done = f" ({sum(counts[1:])} of {counts[0]} documents done)" if len(counts) > 1 else ""
            raise_it = f"; raise {setting} (ESBRIDGE_{setting.upper()}) to wait longer" if setting else ""
            raise EngineTimeout(
                f"the server's task made no progress for {timeout_s:g}s{done}{raise_it}",
                url=url,
                operation=operation,
                index=index,
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)


def _task_progress(status: Mapping[str, Any]) -> tuple[int, ...]:
    """A running reindex task's counts (total first, then what it has done), as ``GET _tasks/<id>`` gives them."""
    task = status.get("task")
    counts = task.get("status") if isinstance(task, Mapping) else None
    if not isinstance(counts, Mapping):
        return (0,)
    keys = ("total", "created", "updated", "deleted", "noops", "version_conflicts")
    return tuple(int(value) if isinstance(value := counts.get(key), int) else 0 for key in keys)


def cancel_duplicates(
    listing: Mapping[str, Any],
    keep: str,
    dest: str,
    cancel: Callable[[str], Mapping[str, Any]],
    *,
    refusing_block: Callable[[], str | None],
    url: str,
) -> None:
    """Cancel every reindex task into ``dest`` but ``keep``, and wait for each to end (``cancel`` asks for that,
    raising esbridge errors). The client library sends a request again when its answer is late
    (``retry_on_timeout``), so one ``_reindex`` call can start two tasks; the one whose id was never returned would
    be left copying into ``dest`` beside ``keep``, or after a failed reindex deleted it, or after the alias moved. A
    cancel the engine does not confirm raises ``ReindexTaskRunning`` naming that task, and every other one left
    running (``task_id``: the first of them).

    ``refusing_block``: the flood-stage block on ``dest``, if it has it (as for ``cancel_task``). A duplicate is not
    cancelled under it, as that cancel may never end: ``ReindexTaskRunning`` names the task and the block instead."""
    duplicates = [
        task_id
        for node in (listing.get("nodes") or {}).values()
        for task_id, task in (node.get("tasks") or {}).items()
        if task_id != keep and f"to [{dest}]" in str(task.get("description", ""))
    ]
    if not duplicates:
        return
    if (block := _block_on(refusing_block)) is not None:
        raise ReindexTaskRunning(
            "; ".join(
                f"{_duplicate(task_id, dest)}; it was not cancelled, {_under_block(task_id, block, dest)}"
                for task_id in duplicates
            ),
            task_id=duplicates[0],
            interrupted=False,
            url=url,
            operation="reindex",
            index=dest,
        )
    # Each duplicate is asked to stop, whatever became of the one before: one left unasked would copy on unnamed.
    left: dict[str, str] = {}
    interrupted = False
    for task_id in duplicates:
        if interrupted:
            stop = f"stop it with `POST _tasks/{task_id}/_cancel`"
            left[task_id] = f"{_duplicate(task_id, dest)}; it was not cancelled, as Ctrl-C stopped the cancels: {stop}"
            continue
        why = _unconfirmed(partial(cancel, task_id))
        if why is None:
            continue
        interrupted = why == _INTERRUPTED
        left[task_id] = (
            f"{_duplicate(task_id, dest)}; cancelling it was not confirmed ({why}), so it may still be writing into "
            f"{dest}: stop it with `POST _tasks/{task_id}/_cancel` (`GET _tasks/{task_id}` says whether it has ended)"
        )
    if left:
        raise ReindexTaskRunning(
            "; ".join(left.values()),
            task_id=next(iter(left)),
            interrupted=interrupted,
            url=url,
            operation="reindex",
            index=dest,
        )


def _duplicate(task: str, dest: str) -> str:
    return f"another reindex task, {task}, was copying into {dest} (a client retry can start one twice)"


def refuse_a_blocked_dest(index_settings: Mapping[str, Any], *, url: str, index: str) -> None:
    """Refuse to start a copy into ``index`` (its ``index`` settings object) while the flood-stage block is on it:
    the task would retry each write it refuses for about a minute, and one cancelled meanwhile may never end."""
    block = flood_stage_block(index_settings)
    if block is None:
        return
    raise IndexWriteBlocked(
        f"{block} is true on {index}, so the copy into it was not started (the engine would retry each write the "
        "block refuses, and a copy cancelled meanwhile may never end). An engine sets this block on the indices of a "
        "node whose disk passed the flood-stage watermark, and lifts it once the disk is below the high watermark "
        f"again: free disk space, then run `esbridge index reindex` again (`PUT <index>/_settings "
        f'{{"{block}": null}}` clears it on one index)',
        url=url,
        operation="reindex",
        index=index,
    )


def missing_dest(url: str, dest: str) -> IndexNotFound:
    """The refusal of a copy into ``dest``, which does not exist: an engine would create it on the copy's first write
    with a mapping of its own guessing, which esbridge's searches cannot use."""
    return IndexNotFound(
        f"the destination {dest} does not exist, so nothing was copied: a reindex does not create it, as the engine "
        "would give it a mapping of its own guessing (no analyzers, no vector field); create it with the wanted "
        "mapping first (`esbridge index reindex` does)",
        url=url,
        operation="reindex",
        index=dest,
        status=404,
    )


def cancel_task(
    cancel: Callable[[], Mapping[str, Any]],
    task: str,
    *,
    refusing_block: Callable[[], str | None],
    cause: BaseException,
    url: str,
    index: str,
) -> None:
    """Cancel the reindex task ``task`` into ``index`` whose wait ``cause`` ended, and wait for it to end (``cancel``
    asks for that, raising esbridge errors). Left running, it writes on into ``index`` after the caller deleted it,
    and the engine re-creates that with a mapping of its own guessing; so a cancel the engine does not confirm
    (a failure, no answer in time, a second Ctrl-C) raises ``ReindexTaskRunning`` naming the task.

    ``refusing_block``: the flood-stage block on ``index``, if it has it. The engine retries each write that block
    refuses for about a minute, and a task cancelled meanwhile was seen never to end (OpenSearch 3.6, its cancel
    unanswered until the node restarted); that task is left to give up by itself instead."""
    if (block := _block_on(refusing_block)) is not None:
        raise _left_running(
            cause,
            task,
            f"the server's reindex task {task} was not cancelled, {_under_block(task, block, index)}",
            url=url,
            index=index,
        ) from cause
    why = _unconfirmed(cancel)
    if why is None:
        return
    raise _left_running(
        cause,
        task,
        f"cancelling the server's reindex task {task} was then not confirmed ({why}), so the copy into {index} may "
        f"still be running: stop it with `POST _tasks/{task}/_cancel` (`GET _tasks/{task}` says whether it has ended)",
        url=url,
        index=index,
    ) from cause


_INTERRUPTED = "interrupted"


def _under_block(task: str, block: str, index: str) -> str:
    """Why ``task`` copying into ``index`` was left running under ``block``, and what becomes of it."""
    return (
        f"as {block} is true on {index} and a copy cancelled while the engine retries the writes a block refuses "
        f"may never end: the task gives up by itself once those retries are spent (about a minute; `GET "
        f"_tasks/{task}` says when), or copies on if the block is lifted first (`POST _tasks/{task}/_cancel` stops "
        "it then)"
    )


def _block_on(refusing_block: Callable[[], str | None]) -> str | None:
    """The flood-stage block ``refusing_block`` reads on a reindex's destination; None when it cannot be read (the
    cancel is then sent, as without the block)."""
    try:
        return refusing_block()
    except EsbridgeError:
        return None


def _unconfirmed(cancel: Callable[[], Mapping[str, Any]]) -> str | None:
    """Send a task's cancel: None once the engine confirms it, else why it is not confirmed."""
    try:
        answer = cancel()
    except (EsbridgeError, KeyboardInterrupt) as exc:
        return _INTERRUPTED if isinstance(exc, KeyboardInterrupt) else str(exc)
    refused = _cancel_failures(answer)
    return f"the engine answered: {'; '.join(refused)}" if refused else None


def _left_running(cause: BaseException, task: str, what: str, *, url: str, index: str) -> ReindexTaskRunning:
    """The error for a task that may still copy: what ended the wait for it, then ``what`` became of it."""
    if isinstance(cause, KeyboardInterrupt):
        stopped = "stopped by Ctrl-C"
    else:  # the error raised names the engine and the index already
        stopped = cause.reason if isinstance(cause, EngineError) else str(cause) or type(cause).__name__
    return ReindexTaskRunning(
        f"{stopped}; {what}",
        task_id=task,
        interrupted=isinstance(cause, KeyboardInterrupt)
        or (isinstance(cause, ReindexTaskRunning) and cause.interrupted),
        url=url,
        operation="reindex",
        index=index,
    )


def _cancel_failures(answer: Mapping[str, Any]) -> list[str]:
    """The failures a cancel answer holds, but "task not found": a task that has ended already is not running."""
    failures = [*(answer.get("node_failures") or []), *(answer.get("task_failures") or [])]
    reasons = []
    for failure in failures:
        cause = failure.get("caused_by") if isinstance(failure.get("caused_by"), Mapping) else failure
        kind, reason = error_type_and_reason({"error": cause})
        if kind != "resource_not_found_exception":
            reasons.append(f"{kind}: {reason}")
    return reasons
