"""How a long ingest reports its progress: a factory of progress bars, and the one that shows nothing."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class Progress(Protocol):
    def update(self, n: int) -> None: ...


ProgressFactory = Callable[[str, int], AbstractContextManager[Progress]]


class _NoProgress:
    def update(self, n: int) -> None:
        pass


def no_progress(description: str, total: int) -> AbstractContextManager[Progress]:
    return nullcontext(_NoProgress())
