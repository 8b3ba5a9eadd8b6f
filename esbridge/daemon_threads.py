"""Threads for calls that may never return (a stuck model session, a write whose model call hangs), which the
process must not wait for: not the event loop's default executor, whose threads ``asyncio.run``'s shutdown and the
interpreter's exit both join, so that one such call kept ``esbridge search`` and the sidecar from ever ending, and
held one of the few threads the embedded engine's reads also run in.

A ``DaemonThreads`` hands each call to an idle thread of its own, or to a new one when none is idle, so a call
that never ends delays no other; a thread is kept for the next call once its call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from queue import SimpleQueue
from threading import Lock, Thread
from typing import Any, TypeVar

T = TypeVar("T")


class DaemonThreads:
    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: SimpleQueue[Callable[[], None]] = SimpleQueue()
        self._lock = Lock()
        self._idle = 0
        self.running = 0
        """calls handed over that have not returned yet"""

    def start(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """``call``'s outcome as a future of the running loop; it runs at once, in the caller's context variables
        (as ``asyncio.to_thread``). When the loop has closed before it returns, its outcome is dropped."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def job() -> None:
            try:
                settle: Callable[[], Any] = _result(future, context.run(call))
            except BaseException as exc:  # handed to whoever awaits the call
                settle = _error(future, exc)
            with self._lock:  # (before the awaiter can resume: it must not see its own call still counted)
                self.running -= 1
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for the answer any more
                loop.call_soon_threadsafe(settle)

        with self._lock:
            self.running += 1
        self.submit(job)
        return future

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on an idle thread, or a new one when none is idle (``start`` counts its call as running)."""
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._jobs.put(job)
        if spawn:
            Thread(target=self._work, name=self._name, daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            finally:
                with self._lock:
                    self._idle += 1


def _result(future: asyncio.Future[T], value: T) -> Callable[[], None]:
    def settle() -> None:
        if not future.done():  # cancelled: its awaiter went on without it
            future.set_result(value)

    return settle


def _error(future: asyncio.Future[Any], exc: BaseException) -> Callable[[], None]:
    def settle() -> None:
        if not future.done():
            future.set_exception(exc)

    return settle
