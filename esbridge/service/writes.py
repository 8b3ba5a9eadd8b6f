"""How a write ends: when searches see it (the refresh policy) and what a timed-out write does.

Refresh policy (``service.refresh``), as the engines' ``refresh`` parameter of bulk writes:

- ``true``: the index is refreshed before the answer. Searches see the write at once, at the cost of a
  new segment per write request (costly under many small writes).
- ``wait_for`` (the default): the answer waits until a search shows exactly what was written (the
  documents' chunks with their new content hashes, and none of the chunks it removed), which the
  engine's periodic refresh (``index.refresh_interval``, 1 s by default) brings about without forcing
  one. After ``service.wait_for_max_s`` the index is refreshed explicitly, so a write never waits on an
  index whose periodic refresh is off.
- ``false``: the answer comes as soon as the engine has the write; searches see it after the next
  periodic refresh.

A write runs in a worker thread that checks a ``Cancellation`` between its steps. When the request
times out, it is cancelled; a write stopped before it reached the engine wrote nothing and answers 504
``write_cancelled``. One that was past that point finishes (the rest is short: removing replaced chunks,
becoming visible) and answers normally if it does so within ``service.write_cancel_grace_s``. Embedding goes in
steps sized to take a quarter of that grace (``esbridge.service.documents``), so a write cut off while embedding
stops in time too. A write that has not stopped by then (a step that cannot be interrupted outlasted the grace:
one text slower to embed than it, a wait for a busy embedding process) answers 504 ``write_still_running``;
``esbridge_writes_running_after_timeout`` counts it until it ends, and the log says how it ended. Its thread is a
daemon (``esbridge.daemon_threads``): a shutdown waits ``service.shutdown_timeout_s`` for it, then closes the
engine and ends the process without it (a model call that never returns would otherwise keep the process alive).
Timed out before it wrote, it no longer holds its documents' locks against the next write of them (``DocumentLocks``).

The write's engine calls share its deadline (``esbridge.engines.call_deadline``): before it writes, the request's
time; once it writes, the grace too. An engine that does not answer (a hung node) then stops the write at its
deadline, however long the engine client's own timeout and retries would wait: ``write_cancelled`` while it was
still reading, else ``timeout`` (part of it may be written).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from esbridge import errors
from esbridge.daemon_threads import DaemonThreads
from esbridge.engines.base import Engine
from esbridge.engines.call_deadline import DeadlinePassed, engine_calls_until
from esbridge.service.errors import ServiceError
from esbridge.service.metrics import Metrics

RefreshPolicy = Literal["false", "wait_for", "true"]
T = TypeVar("T")

log = logging.getLogger("esbridge.service")
_WRITE_THREADS = DaemonThreads("esbridge-write")

_POLL_DELAYS_S = (0.02, 0.05, 0.1, 0.15, 0.25)


class WriteCancelled(Exception):
    """The write stopped at a step boundary because its request timed out; nothing reached the engine."""


class Cancellation:
    """Whether a write's request has timed out, and the deadline of its engine calls: ``deadline`` until it writes
    (``begin``), then the grace too, less a moment to answer in (``engine_deadline``)."""

    def __init__(self, deadline: float = math.inf, grace_s: float = 0.0) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()  # ``begin`` and ``gave_up`` decide one after the other
        self.deadline, self.grace_s = deadline, grace_s
        self.writing: str | None = None  # the step that began writing to the engine, once one has
        self.step = "starting"  # the step last checked: where a write that does not end is held

    def begin(self, step: str) -> None:
        """``check(step)``, then count the write as writing from here on."""
        with self._lock:
            self.check(step)
            self.writing = step

    def gave_up(self) -> bool:
        """Whether the write is cancelled and never writes: cancelled before ``begin``, which then raises."""
        with self._lock:
            return self.cancelled and self.writing is None

    def engine_deadline(self) -> float:
        if self.writing is None:
            return self.deadline
        return self.deadline + max(self.grace_s - 0.25, self.grace_s / 2)

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self, step: str) -> None:
        """Raise ``WriteCancelled`` if the write was cancelled; call before a step that would write."""
        self.step = step
        if self._event.is_set():
            raise WriteCancelled(step)


@dataclass(frozen=True, eq=False)
class _Holder:
    cancel: Cancellation
    since: float = field(default_factory=time.time)

    def describe(self, doc_id: str) -> str:
        """Why a write of ``doc_id`` waited for this one, for the waiter's 504."""
        since = time.strftime("%H:%M:%S", time.gmtime(self.since))
        where = f"writing ({self.cancel.writing})" if self.cancel.writing else self.cancel.step
        return (
            f"waiting for an earlier write of the same document {doc_id!r}, which has held it since {since} UTC "
            f"({time.time() - self.since:.1f} s) and is still running: {where}"
        )


class DocumentLocks:
    """One lock per (index, document id), so that two writes of one document in this process run one after
    the other: each reads the chunks the document has before writing and deletes those it no longer
    produces, and two interleaved writes would delete each other's chunks.

    A write whose request timed out before it began writing (``Cancellation.gave_up``: one held by a model call that
    does not return) gives its locks up to the next write of its documents: it raises ``WriteCancelled`` at its
    ``begin`` whenever it goes on, so it writes nothing that could overwrite the newer write. One that has begun
    writing keeps them until it ends, which its engine calls' deadline bounds."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._holders: dict[tuple[str, str], _Holder] = {}

    @contextmanager
    def held(self, index: str, doc_ids: Collection[str], cancel: Cancellation) -> Iterator[None]:
        """Hold the documents' locks (taken in sorted order, so two batches cannot deadlock); a write
        cancelled while it waits raises ``WriteCancelled`` naming the write it waited for."""
        mine = _Holder(cancel)
        taken: list[tuple[str, str]] = []
        try:
            for key in sorted({(index, doc_id) for doc_id in doc_ids}):
                self._take(key, mine)
                taken.append(key)
            yield
        finally:
            with self._changed:
                for key in taken:
                    if self._holders.get(key) is mine:  # not given up to a later write meanwhile
                        del self._holders[key]
                self._changed.notify_all()

    def _take(self, key: tuple[str, str], mine: _Holder) -> None:
        with self._changed:
            while True:
                holder = self._holders.get(key)
                if holder is None or holder.cancel.gave_up():
                    if holder is not None:
                        log.warning(
                            "a write of document %r goes ahead of an earlier one that timed out before it wrote "
                            "(held since %s at: %s), which will write nothing",
                            key[1],
                            time.strftime("%H:%M:%S UTC", time.gmtime(holder.since)),
                            holder.cancel.step,
                        )
                    self._holders[key] = mine
                    return
                if mine.cancel.cancelled:
                    mine.cancel.check(holder.describe(key[1]))
                self._changed.wait(0.05)


DOCUMENT_LOCKS = DocumentLocks()


@dataclass(frozen=True)
class WriteControl:
    """How one write ends: its refresh policy, how long ``wait_for`` waits, and its cancellation."""

    refresh: RefreshPolicy = "true"
    wait_for_max_s: float = 5.0
    cancel: Cancellation = field(default_factory=Cancellation)

    def finish(self, engine: Engine, index: str, expected: Mapping[str, Mapping[str, str | None]]) -> bool:
        """Apply the policy to a write of ``expected`` (see ``make_visible``)."""
        return make_visible(engine, index, expected, self.refresh, max_wait_s=self.wait_for_max_s, cancel=self.cancel)


def make_visible(
    engine: Engine,
    index: str,
    expected: Mapping[str, Mapping[str, str | None]],
    policy: RefreshPolicy,
    *,
    max_wait_s: float,
    cancel: Cancellation | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Apply ``policy`` to a write of ``expected`` (doc id -> its chunk ids -> content hash; an empty
    mapping for a deleted document); whether searches now see the write."""
    if policy == "false" or not expected:
        return policy != "false"
    if policy == "wait_for":
        deadline = clock() + max_wait_s
        for attempt in range(10_000):
            if shows(engine, index, expected):
                return True
            if clock() >= deadline or (cancel is not None and cancel.cancelled):
                break
            sleep(min(_POLL_DELAYS_S[min(attempt, len(_POLL_DELAYS_S) - 1)], max(0.0, deadline - clock())))
    engine.refresh(index)
    return True


def shows(engine: Engine, index: str, expected: Mapping[str, Mapping[str, str | None]]) -> bool:
    """Whether a search of ``index`` shows exactly ``expected``'s chunks (by id and content hash)."""
    query = {"terms": {"doc_id": sorted(expected)}}
    found: dict[str, dict[str, str | None]] = {doc_id: {} for doc_id in expected}
    try:
        for hit in engine.scan(index, query, ["doc_id", "chunk_id", "content_hash"], sort_field="chunk_id"):
            doc_id = str(hit.source.get("doc_id"))
            if doc_id in found:
                found[doc_id][hit.id] = hit.source.get("content_hash")
    except errors.IndexUnavailable:  # some shards did not answer: the write is done, its visibility unconfirmed
        return False
    return found == {doc_id: dict(chunks) for doc_id, chunks in expected.items()}


async def run_cancellable(
    work: Callable[[Cancellation], T],
    *,
    timeout_s: float,
    grace_s: float,
    metrics: Metrics,
    what: str,
    elapsed_s: float = 0.0,
    running: set[asyncio.Future[Any]] | None = None,
) -> T:
    """``work`` in a worker thread, cancelled when the request outlives ``timeout_s`` (``elapsed_s`` of which
    went before the work started; see the module docstring). It is in ``running`` until it ends, whenever
    that is, so that the engine is not closed under it."""
    left_s = max(0.0, timeout_s - elapsed_s)
    cancel = Cancellation(time.monotonic() + left_s, grace_s)

    def bounded() -> T:
        with engine_calls_until(cancel.engine_deadline):
            return work(cancel)

    task = _WRITE_THREADS.start(bounded)
    if running is not None:
        running.add(task)
        task.add_done_callback(running.discard)
    try:
        done = await _wait(task, left_s)
        if not done:
            cancel.cancel()
            done = await _wait(task, grace_s)
    except asyncio.CancelledError:  # the client went away: stop the write as a timeout would
        cancel.cancel()
        _track(task, metrics, what)
        raise
    in_time = f"within {timeout_s:g} s (service.request_timeout_s)"
    if done:
        try:
            return task.result()
        except WriteCancelled as exc:
            raise ServiceError(
                504,
                "write_cancelled",
                f"the {what} did not finish {in_time} and was stopped before {exc}: nothing was written; it is safe to "
                "send it again",
            ) from None
        except DeadlinePassed:
            if cancel.writing is None:
                raise ServiceError(
                    504,
                    "write_cancelled",
                    f"the {what} did not finish {in_time}: the engine did not answer in time, and it was stopped "
                    "before writing: nothing was written; it is safe to send it again",
                ) from None
            raise ServiceError(
                504,
                "timeout",
                f"the {what} did not finish {in_time} and the {grace_s:g} s given to one that is writing "
                f"(service.write_cancel_grace_s): the engine did not answer while it was {cancel.writing}, so part of "
                "it may be written; sending it again is safe",
            ) from None
    _track(task, metrics, what)
    raise ServiceError(
        504,
        "write_still_running",
        f"the {what} did not finish {in_time} and had not stopped {grace_s:g} s later (service.write_cancel_grace_s): "
        "it is still running, and either stops before it writes or, if it already has, completes; sending it again "
        "is safe",
    )


async def _wait(task: asyncio.Future[T], timeout_s: float) -> bool:
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    return bool(done)


def _track(task: asyncio.Future[T], metrics: Metrics, what: str) -> None:
    metrics.writes_running.inc()

    def ended(finished: asyncio.Future[T]) -> None:
        metrics.writes_running.dec()
        problem = None if finished.cancelled() else finished.exception()
        if problem is None:
            log.info("the %s that answered 504 has ended (completed)", what)
        elif isinstance(problem, WriteCancelled):
            log.info("the %s that answered 504 has ended (stopped before %s)", what, problem)
        elif isinstance(problem, DeadlinePassed):
            log.info("the %s that answered 504 has ended (stopped at its deadline: the engine did not answer)", what)
        else:
            log.error("the %s that answered 504 failed afterwards: %s", what, problem)

    task.add_done_callback(ended)


def chunk_hashes(pairs: Sequence[tuple[str, str, str | None]]) -> dict[str, dict[str, str | None]]:
    """doc id -> chunk id -> content hash, from (doc id, chunk id, hash) triples."""
    grouped: dict[str, dict[str, str | None]] = {}
    for doc_id, chunk_id, content_hash in pairs:
        grouped.setdefault(doc_id, {})[chunk_id] = content_hash
    return grouped
