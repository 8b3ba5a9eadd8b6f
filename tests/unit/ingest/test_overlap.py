"""Background bulk writes: one at a time, in order, overlapping the caller, errors never lost."""

from __future__ import annotations

import threading

import pytest

from esbridge.ingest.overlap import BackgroundWrites


def test_a_write_runs_while_the_caller_goes_on() -> None:
    caller_moved_on = threading.Event()
    seen: list[str] = []

    def write() -> None:
        # Finishes only once the caller has gone on after submitting: the two overlap.
        assert caller_moved_on.wait(5)
        seen.append("written")

    with BackgroundWrites() as writes:
        writes.submit(write)
        seen.append("embedding the next batch")
        caller_moved_on.set()
    assert seen == ["embedding the next batch", "written"]


def test_writes_run_one_at_a_time_in_order() -> None:
    order: list[int] = []
    running = threading.Lock()

    def write(number: int) -> None:
        assert running.acquire(blocking=False), "two writes at once"
        try:
            order.append(number)
        finally:
            running.release()

    with BackgroundWrites() as writes:
        for number in range(20):
            writes.submit(lambda number=number: write(number))  # type: ignore[misc]
    assert order == list(range(20))


def test_a_failed_write_is_raised_at_the_next_submit() -> None:
    def fail() -> None:
        raise RuntimeError("engine refused the batch")

    ran_after: list[bool] = []
    with BackgroundWrites() as writes:
        writes.submit(fail)
        with pytest.raises(RuntimeError, match="engine refused"):
            writes.submit(lambda: ran_after.append(True))
    assert ran_after == []


def test_the_callers_error_wins_and_the_write_in_flight_still_finishes() -> None:
    finished = threading.Event()

    def embed_fails_meanwhile() -> None:
        with BackgroundWrites() as writes:
            writes.submit(finished.set)
            raise KeyError("embedding failed")

    with pytest.raises(KeyError):
        embed_fails_meanwhile()
    assert finished.is_set()
