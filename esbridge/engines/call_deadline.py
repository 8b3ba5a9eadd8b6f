"""A deadline on the synchronous engine calls one thread makes, above the client's own timeout and retries.

The engine clients wait ``timeout_s`` per attempt, ``retries + 1`` attempts (10 s x 4 by default), whoever calls
them. A request of the HTTP sidecar has its own time (``service.request_timeout_s``): a write running in a worker
thread sets its deadline here, and each attempt of the connections in ``cut_answers`` then waits at most until it.
Once it has passed, an attempt raises ``DeadlinePassed`` without sending anything, which no client retries and no
adapter translates into an engine error, so the write stops there instead of outliving its answer by minutes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


class DeadlinePassed(Exception):
    """An engine call was not made (or not waited for) because its caller's deadline had passed."""


@contextmanager
def engine_calls_until(deadline: Callable[[], float]) -> Iterator[None]:
    """Engine calls this thread makes inside the block end by ``deadline()`` (``time.monotonic`` seconds; read at
    each attempt, so a caller may move it)."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = deadline
    try:
        yield
    finally:
        _local.deadline = previous


def attempt_timeout(timeout_s: float | None) -> float | None:
    """How long this thread's next engine attempt may wait: ``timeout_s`` (the client's), or less when a deadline
    comes first. Raises ``DeadlinePassed`` when it has."""
    deadline: Callable[[], float] | None = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout_s
    left = deadline() - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("its deadline passed")
    return left if timeout_s is None else min(timeout_s, left)
