"""A time limit on an ``await`` that does not wrap it in a task.

``asyncio.wait_for`` runs what it awaits in a new task before Python 3.12: a loop turn to start it and
another to hand its result back, each of them paid on a search's critical path (the embedding, then the
kNN request). ``within`` cancels the awaiting task itself when the time is up and raises
``TimeoutError`` (``asyncio.timeout``; the ``async-timeout`` package before Python 3.11).

The engine is given the same limit: every search request a stage sends carries the time it has left as its
``timeout`` (``with_timeout``), so that the engine stops with what it found instead of searching on for nobody.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from typing import Any

if sys.version_info >= (3, 11):
    from asyncio import timeout as within
else:  # pragma: no cover - exercised on Python 3.10 only
    from async_timeout import timeout as within

__all__ = ["capped", "halfway", "no_answer", "time_left", "with_timeout", "within"]


def capped(timeout_s: float, ends: float) -> float:
    """``timeout_s``, or the time left until ``ends`` (a ``time.perf_counter()`` reading: the search's deadline)
    when that is less, to 0.01 s and never below 0."""
    left = ends - time.perf_counter()
    return timeout_s if timeout_s <= left else max(round(left, 2), 0.0)


def time_left(ends: float) -> float | None:
    """The time left until ``ends`` (``capped``), for ``within``: None when there is no deadline (``math.inf``)."""
    left = capped(math.inf, ends)
    return None if math.isinf(left) else left


def halfway(ends: float) -> float:
    """The moment halfway from now to ``ends`` (``math.inf`` stays): the most a step that a later stage does
    without may take, so that a step which does not answer in time leaves that stage half the search's time."""
    now = time.perf_counter()
    return now + (ends - now) / 2


def no_answer(timeout_s: float) -> str:
    """Why a stage that had ``timeout_s`` of a search's time left (none: 0 or less) was given up."""
    return f"no answer within the {max(timeout_s, 0):.2f}s left of the search's time"


def with_timeout(body: Mapping[str, Any], timeout_s: float | None) -> dict[str, Any]:
    """``body`` with the time the engine may spend on it, ``timeout_s`` (to the millisecond, at least 1 ms), as its
    top-level ``timeout``: the engine then answers what it found in that time, flagged ``timed_out``, instead of
    searching on after the client has given up. Elasticsearch refuses ``timeout`` inside the ``knn`` section, not at
    the top beside it. None (no limit) leaves ``body`` as it is."""
    if timeout_s is None or math.isinf(timeout_s):
        return dict(body)
    return {**body, "timeout": f"{max(round(timeout_s * 1000), 1)}ms"}
