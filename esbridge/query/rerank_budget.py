"""A re-ranking with a time budget (``pipeline.rerank.timeout_s``), on a thread of its own.

A thread cannot be stopped from outside: a re-ranking past its budget goes on until the model returns, and its
answer is then dropped. Each runs on a daemon thread rather than in the event loop's default executor, so such
stragglers neither hold the threads that embed queries and search the embedded engine, nor keep a CLI run from
exiting. At most ``LATE_LIMIT`` of them may run at once; while that many do, a search skips re-ranking at once
instead of starting another (a re-ranker that hangs would otherwise add a thread per search). A straggler shares
nothing a later search writes: the ONNX cross-encoder's session and tokenizer are only read by a call, and
sentence-transformers' ``predict`` only puts the model in eval mode, as every call does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from esbridge.query.deadline import within

T = TypeVar("T")

LATE_LIMIT = 2
"""Re-rankings past their budget that may still run; each holds a core while it does (2 on this machine)."""


class OverBudget(Exception):
    """The re-ranking did not end within its budget, or was not started because earlier ones are still running."""


class _Call(Generic[T]):
    """One call on its thread, and what the awaiting search knows of it."""

    def __init__(self, work: Callable[[], T], loop: asyncio.AbstractEventLoop, done: Callable[[], None]) -> None:
        self.future: asyncio.Future[T] = loop.create_future()
        self._work, self._loop, self._done = work, loop, done
        self._lock = threading.Lock()
        self._finished = self._abandoned = False

    def run(self) -> None:
        try:
            result = self._work()
        except BaseException as exc:  # handed to the search, which decides what it means
            self._deliver(self.future.set_exception, exc)
        else:
            self._deliver(self.future.set_result, result)
        finally:
            with self._lock:
                self._finished = True
                abandoned = self._abandoned
            if abandoned:
                self._done()

    def abandon(self) -> bool:
        """Leave the call to finish on its own; False when it already has."""
        with self._lock:
            self._abandoned = not self._finished
            return self._abandoned

    def _deliver(self, setter: Callable[[T], None] | Callable[[BaseException], None], value: object) -> None:
        def settle() -> None:
            if not self.future.done():  # the search stopped waiting: nobody reads it
                setter(value)  # type: ignore[arg-type]

        with contextlib.suppress(RuntimeError):  # the loop is closed: the search and its command are over
            self._loop.call_soon_threadsafe(settle)


class RerankThreads:
    """Runs re-rankings on threads of their own within a budget, and counts those still running past it."""

    def __init__(self, late_limit: int = LATE_LIMIT) -> None:
        self.late_limit = late_limit
        self._lock = threading.Lock()
        self._late = 0

    @property
    def late(self) -> int:
        """Re-rankings that went past their budget and have not ended yet."""
        with self._lock:
            return self._late

    async def run(self, work: Callable[[], T], budget_s: float, *, of: str = "pipeline.rerank.timeout_s") -> T:
        """``work()``'s result, or ``OverBudget`` when it takes longer than ``budget_s`` seconds (``of``: where
        that budget comes from, as messages name it)."""
        with self._lock:
            if self._late >= self.late_limit:
                raise OverBudget(
                    f"{self._late} earlier re-ranking(s) that took longer than the budget of {budget_s:g} s "
                    f"({of}) are still running"
                )
        call = _Call(work, asyncio.get_running_loop(), self._ended)
        threading.Thread(target=call.run, name="esbridge-rerank", daemon=True).start()
        try:
            async with within(budget_s):
                return await call.future
        except asyncio.TimeoutError:
            self._leave(call)
            raise OverBudget(f"it took longer than its budget of {budget_s:g} s ({of})") from None
        except asyncio.CancelledError:  # the search itself was cancelled (its request timed out, Ctrl-C)
            self._leave(call)
            raise

    def _leave(self, call: _Call[T]) -> None:
        with self._lock:  # held while abandoning, so that the call's end is counted after its lateness
            if call.abandon():
                self._late += 1

    def _ended(self) -> None:
        with self._lock:
            self._late -= 1
