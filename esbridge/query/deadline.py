"""A time limit on an ``await`` that does not wrap it in a task.

``asyncio.wait_for`` runs what it awaits in a new task before Python 3.12: a loop turn to start it and
another to hand its result back, each of them paid on a search's critical path (the embedding, then the
kNN request). ``within`` cancels the awaiting task itself when the time is up and raises
``TimeoutError`` (``asyncio.timeout``; the ``async-timeout`` package before Python 3.11).
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from asyncio import timeout as within
else:  # pragma: no cover - exercised on Python 3.10 only
    from async_timeout import timeout as within

__all__ = ["no_answer", "within"]


def no_answer(timeout_s: float) -> str:
    """Why a stage that had ``timeout_s`` of a search's time left (none: 0 or less) was given up."""
    return f"no answer within the {max(timeout_s, 0):.2f}s left of the search's time"
