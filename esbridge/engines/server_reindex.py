"""``Engine.reindex`` as a task on the server, for the adapters of OpenSearch and Elasticsearch: each gives its
client's calls that start, list, poll and cancel the task, and translates its client's errors in ``_call``."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from esbridge.engines import paging, responses
from esbridge.engines.blocks import flood_stage_block
from esbridge.errors import IndexNotFound


class ServerReindex:
    """The copy, its wait and its cancel; the adapter sets ``_url`` and ``_reindex_stall_s``, and lists this base after
    the one giving ``_call``."""

    _url: str
    _reindex_stall_s: float

    def _call(self, operation: str, index: str | None = None) -> AbstractContextManager[None]:
        """The adapter's translation of its client's errors (a base before this one gives it)."""
        raise NotImplementedError

    def get_index_settings(self, index: str) -> dict[str, Any]:
        raise NotImplementedError

    def _start_reindex(self, source: str, dest: str) -> str:
        """Start the copy of ``source`` into ``dest`` as a task; its id."""
        raise NotImplementedError

    def _reindex_tasks(self) -> Mapping[str, Any]:
        """The reindex tasks running, described (``GET _tasks?actions=*reindex&detailed``)."""
        raise NotImplementedError

    def _task_status(self, task: str) -> Mapping[str, Any]:
        """``GET _tasks/<task>``."""
        raise NotImplementedError

    def _cancel_and_wait(self, task: str) -> Mapping[str, Any]:
        """``POST _tasks/<task>/_cancel?wait_for_completion=true``."""
        raise NotImplementedError

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        paging.refuse_a_blocked_dest(self._dest_settings(dest), url=self._url, index=dest)

        def refusing_block() -> str | None:
            return flood_stage_block(self.get_index_settings(dest))

        with self._call("reindex", dest):
            task = self._start_reindex(source, dest)
            try:
                paging.cancel_duplicates(
                    self._reindex_tasks(),
                    task,
                    dest,
                    lambda other: self._cancel(other, dest),
                    refusing_block=refusing_block,
                    url=self._url,
                )
                result = paging.wait_for_task(
                    lambda: self._task_status(task),
                    timeout_s=self._reindex_stall_s if timeout_s is None else timeout_s,
                    setting=paging.STALL_SETTING if timeout_s is None else None,
                    url=self._url,
                    operation="reindex",
                    index=dest,
                )
            except BaseException as exc:
                paging.cancel_task(
                    lambda: self._cancel(task, dest),
                    task,
                    refusing_block=refusing_block,
                    cause=exc,
                    url=self._url,
                    index=dest,
                )
                raise
        return responses.reindexed_count(result, url=self._url, index=dest)

    def _dest_settings(self, dest: str) -> Mapping[str, Any]:
        try:
            return self.get_index_settings(dest)
        except IndexNotFound as exc:
            raise paging.missing_dest(self._url, dest) from exc

    def _cancel(self, task: str, dest: str) -> Mapping[str, Any]:
        with self._call("cancel the reindex task", dest):
            return self._cancel_and_wait(task)
