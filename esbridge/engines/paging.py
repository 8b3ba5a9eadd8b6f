"""Algorithms shared by the adapters that only need the adapter's own ``search`` and task polling."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from esbridge.engines.base import Hit, SearchResult
from esbridge.engines.errors import error_type_and_reason
from esbridge.errors import EngineResponseError, EngineTimeout, IndexUnavailable


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


def cancel_duplicates(listing: Mapping[str, Any], keep: str, dest: str, cancel: Callable[[str], Any]) -> None:
    """Cancel every reindex task into ``dest`` but ``keep``. The client library sends a request again when its
    answer is late (``retry_on_timeout``), so one ``_reindex`` call can start two tasks; the one whose id was never
    returned would be left copying into ``dest`` after a failed reindex deleted it, or after the alias moved."""
    for node in (listing.get("nodes") or {}).values():
        for task_id, task in (node.get("tasks") or {}).items():
            if task_id != keep and f"to [{dest}]" in str(task.get("description", "")):
                cancel(task_id)
