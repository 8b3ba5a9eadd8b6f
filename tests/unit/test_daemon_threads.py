"""Calls handed to daemon threads: one that never returns delays no other and holds no loop's end; each runs in
its caller's context variables; its error reaches whoever awaits it."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from esbridge.daemon_threads import DaemonThreads

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_call_that_never_returns_delays_no_other_and_the_loop_ends_without_it(released: threading.Event) -> None:
    threads = DaemonThreads("test")

    async def main() -> tuple[str, int]:
        held = threads.start(lambda: released.wait(60))
        WHO.set("caller")
        answer = await asyncio.wait_for(threads.start(WHO.get), 2)
        assert not held.done()
        for _ in range(100):  # the thread that answered counts itself out just after handing the answer over
            if threads.running == 1:
                break
            await asyncio.sleep(0.01)
        return answer, threads.running

    began = time.monotonic()
    answer, running = asyncio.run(main())
    assert (answer, running) == ("caller", 1)  # the caller's context; the held call still counted
    assert time.monotonic() - began < 2  # asyncio.run's end did not wait for the held call


def test_an_error_reaches_the_awaiting_caller_and_the_next_call_runs() -> None:
    threads = DaemonThreads("test")

    def fail() -> None:
        raise ValueError("no vector")

    async def main() -> str:
        with pytest.raises(ValueError, match="no vector"):
            await threads.start(fail)
        return await threads.start(lambda: threading.current_thread().name)

    assert asyncio.run(main()) == "test"
    assert threads.running == 0
