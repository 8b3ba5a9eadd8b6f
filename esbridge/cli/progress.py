"""Progress bars on a terminal, and none when output is JSON or not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from esbridge.ingest.progress import Progress, ProgressFactory, no_progress

if TYPE_CHECKING:
    from tqdm import tqdm


def progress_for(as_json: bool) -> ProgressFactory:
    if as_json or not sys.stderr.isatty():
        return no_progress
    return _tqdm_bar


def _tqdm_bar(description: str, total: int) -> AbstractContextManager[Progress]:
    return _bar(description, total)


@contextmanager
def _bar(description: str, total: int) -> Iterator[Progress]:
    from tqdm import tqdm

    with tqdm(total=total, desc=description, unit="chunk", file=sys.stderr, dynamic_ncols=True) as bar:
        yield _TqdmProgress(bar)


class _TqdmProgress:
    def __init__(self, bar: tqdm[Any]) -> None:
        self._bar = bar

    def update(self, n: int) -> None:
        self._bar.update(n)


@contextmanager
def query_progress(as_json: bool, description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A bar counting queries, and its ``advance(n)``; a no-op when output is JSON or not a terminal."""
    if as_json or not sys.stderr.isatty():
        yield lambda n: None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=description, unit="query", file=sys.stderr, dynamic_ncols=True) as bar:

        def advance(n: int) -> None:
            bar.update(n)

        yield advance
