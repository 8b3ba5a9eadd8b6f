"""The embedded engine's query path for asyncio callers: each search runs in a worker thread, so searches
run concurrently (tantivy and usearch release the GIL while they search). Its callers search under
deadlines, so a search of an index being built whole waits ``builds.PATIENCE_S``, not to the end; a one-shot
caller (the command line) waits for the build first (``prepare``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from esbridge import errors
from esbridge.config.settings import Settings
from esbridge.engines.base import Dialect, SearchResult
from esbridge.engines.embedded import builds
from esbridge.engines.embedded.engine import EmbeddedEngine

log = logging.getLogger(__name__)
_PROBE = {"size": 0, "query": {"match_all": {}}}


class AsyncEmbeddedEngine:
    """The query path of the embedded engine; each search runs in a worker thread."""

    def __init__(self, data_dir: Path | str | bytes | None = None, *, engine: EmbeddedEngine | None = None) -> None:
        if (data_dir is None) == (engine is None):
            raise ValueError("give either data_dir or engine")
        self._owned = engine is None
        self._engine = engine if engine is not None else EmbeddedEngine(data_dir)  # type: ignore[arg-type]

    @classmethod
    def from_settings(cls, settings: Settings) -> AsyncEmbeddedEngine:
        return cls(settings.data_dir)

    @property
    def dialect(self) -> Dialect:
        return "opensearch"

    @property
    def url(self) -> str:
        return self._engine.url

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        return await asyncio.to_thread(self._engine.search, index, body, patience_s=builds.PATIENCE_S)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        return await asyncio.to_thread(self._engine.msearch, index, bodies, patience_s=builds.PATIENCE_S)

    async def prepare(self, index: str) -> None:
        """Wait until ``index`` answers at once, saying what is built if that takes longer than a search waits.
        Other errors are left to the searches that follow, which report them as usual."""
        try:
            await asyncio.to_thread(self._engine.search, index, _PROBE, patience_s=builds.PATIENCE_S)
            return
        except errors.IndexUnavailable as exc:
            log.warning("%s: %s; waiting for it", exc.url, exc.reason)  # (the search waits: nothing failed)
        except errors.EngineError:
            return
        with contextlib.suppress(errors.EngineError):
            await asyncio.to_thread(self._engine.search, index, _PROBE, patience_s=None)

    async def close(self) -> None:
        if self._owned:  # (in a thread: the close waits for searches still running in theirs)
            await asyncio.to_thread(self._engine.close)
