"""What one service process holds for its lifetime: the engine connections, the searcher and the model.

The engine is connected on first use rather than at start-up, so a sidecar that starts before its
cluster comes up answers 503 until the cluster is there instead of failing to start. Searches use the
async adapter (one pooled client); writes use the synchronous adapter in a worker thread. The embedded
engine is opened once and shared by both paths.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from esbridge.attach.guard import preflight
from esbridge.config.settings import Settings
from esbridge.daemon_threads import DaemonThreads
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.identity import recorded_identity
from esbridge.engines.base import AsyncEngine, Engine
from esbridge.engines.factory import Resolved, connect, connect_async, resolve_kind
from esbridge.errors import EngineUnavailable
from esbridge.ids import shown_path
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import parameters_from
from esbridge.query.api import open_query_embedder
from esbridge.query.deadline import within
from esbridge.query.factory import searcher_for
from esbridge.query.orchestrator import HybridSearcher
from esbridge.service.model_probe import ModelProbe
from esbridge.service.models import IndexStatus

log = logging.getLogger("esbridge.service")

_CONNECT_THREADS = DaemonThreads("esbridge-connect")
_READY_QUERY = {"size": 0, "query": {"match_all": {}}}
_COUNT_QUERY = {"size": 0, "track_total_hits": True, "query": {"match_all": {}}}


@dataclass(frozen=True)
class Connected:
    kind: Resolved
    engine: Engine
    async_engine: AsyncEngine
    searcher: HybridSearcher


class Backend:
    def __init__(self, settings: Settings, embedder: Embedder | None, model_problem: str | None = None) -> None:
        self.settings = settings
        self.embedder = embedder
        self.model_problem = model_problem
        self.model_probe = ModelProbe()
        self._connected: Connected | None = None
        self._connecting: asyncio.Future[Connected] | None = None
        self._index_ensured = False
        self._ensure_lock = threading.Lock()
        self.writes_ended = 0  # counts writes that ended, so a search that overlapped one drops what it cached
        self.writes: set[asyncio.Future[Any]] = set()  # writes running in worker threads, answered or not

    def invalidate_responses(self) -> None:
        """Drop every cached search answer: a write to the index ended (call on the event loop's thread).
        The searcher serves one index, so its whole response cache is that index's."""
        self.writes_ended += 1
        self.clear_response_cache()

    def clear_response_cache(self) -> None:
        if self._connected is not None:
            self._connected.searcher.forget_responses()

    @property
    def index(self) -> str:
        return self.settings.index

    async def connected(self) -> Connected:
        """The engine adapters and searcher, connecting first if needed (raises EngineUnavailable).

        One connection attempt at a time, shared by every request that waits for it. A request that stops
        waiting (its time is up) leaves the attempt running, so that what it connects is kept, not leaked."""
        if self._connected is not None:
            return self._connected
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._connect_once())
            self._connecting.add_done_callback(_retrieve)
        return await asyncio.shield(self._connecting)

    async def _connect_once(self) -> Connected:
        # A daemon thread: a shutdown during an attempt on an engine that never answers does not wait for the
        # engine client's retries (4 x 10 s by default) before the process ends.
        self._connected = await _CONNECT_THREADS.start(self._connect)
        return self._connected

    def _connect(self) -> Connected:
        kind = resolve_kind(self.settings)
        settings = self.settings.model_copy(update={"engine": kind})
        engine = connect(settings)
        async_engine: AsyncEngine
        try:  # an attached index's vector field against the query model, before any search
            settings = preflight(settings, engine, self.embedder.dimension if self.embedder is not None else None)
            if kind == "embedded":
                from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine

                assert isinstance(engine, EmbeddedEngine)
                async_engine = AsyncEmbeddedEngine(engine=engine)
            else:
                async_engine = connect_async(settings, kind)
            # Raises when the re-ranker's model cannot load; the next request tries again.
            searcher = searcher_for(
                settings, async_engine, self.embedder, probe=engine, model_problem=self.model_problem
            )
        except BaseException:  # the async adapter has opened nothing yet; the embedded one shares ``engine``
            engine.close()
            raise
        return Connected(kind, engine, async_engine, searcher)

    async def check_index(self, timeout_s: float = 5.0) -> str | None:
        """Raise unless the engine is connected and answers a search on the index within ``timeout_s``; the
        answer's ``SearchResult.partial``."""
        async with within(timeout_s):
            connected = await self.connected()
            self.check_data_dir(connected, "search")
            return (await connected.async_engine.search(self.index, _READY_QUERY)).partial

    def check_data_dir(self, connected: Connected, operation: str = "write") -> None:
        """Raise ``EngineUnavailable`` when the embedded engine's database is gone (its data directory was removed
        while the service runs) or is another file than the one it opened (a copy restored). Searches are refused
        too: a thread that has the database open could still answer, but one that opens it now cannot (or opens the
        copy), so answering from what is open would succeed or fail by thread."""
        if connected.kind != "embedded":
            return
        from esbridge.engines.embedded import EmbeddedEngine
        from esbridge.engines.embedded.store import DB_FILE

        engine = connected.engine
        assert isinstance(engine, EmbeddedEngine)
        problem = engine.database_problem()
        if problem is None:
            return
        said = str(problem)
        if problem.kind == "gone":
            said = (
                f"the data directory {shown_path(engine.data_dir)} has no database {DB_FILE} (it was removed or moved "
                "while the service runs); move it back: searches, writes and readiness recover then (a copy put in its "
                "place is refused until the service restarts)"
            )
        raise EngineUnavailable(said, url=engine.url, operation=operation, index=self.index)

    async def check_model(self, timeout_s: float = 5.0) -> None:
        """Raise ``ModelMismatch`` when every search would be refused: the query model is not the index's."""
        async with within(timeout_s):
            guard = (await self.connected()).searcher.model_guard
            if guard is not None:
                await guard.check()

    async def model_answers(self) -> str | None:
        """Why the loaded query model does not answer a query embedding in the time a search waits for one
        (``ModelProbe``); None when it does, or when no model is loaded (``model_problem`` says why)."""
        if self.embedder is None:
            return None
        return await self.model_probe.problem(self.embedder, self.settings.pipeline.embed_timeout_s)

    def ensure_index(self, engine: Engine) -> None:
        """Create the versioned index behind the alias on the first write, as ``esbridge ingest`` does."""
        with self._ensure_lock:
            if self._index_ensured:
                return
            if not engine.index_exists(self.index):
                dimension = self.embedder.dimension if self.embedder is not None else None
                # The model is recorded once its first vector is written (``documents.upsert``), not here: a first
                # write that fails would leave a record naming no vector, refusing every other model.
                IndexManager(engine, self.index, parameters_from(self.settings, dimension)).ensure()
            self._index_ensured = True

    def index_status(self, engine: Engine) -> IndexStatus:
        """What the index behind the alias holds (blocking)."""
        targets = engine.alias_targets(self.index)
        exists = bool(targets) or engine.index_exists(self.index)
        chunks, warnings = 0, []
        if exists:
            # A search counts what the shards that answer hold, and says which did not: a status reports that
            # rather than fail, as ``Engine.count`` would.
            counted = engine.search(self.index, _COUNT_QUERY)
            chunks = counted.total
            if counted.partial:
                warnings.append(f"chunks: {counted.partial}")
        return IndexStatus(
            index=self.index,
            engine=self.settings.display_url,
            exists=exists,
            indices=targets or ([self.index] if exists else []),
            chunks=chunks,
            partial=bool(warnings),
            warnings=warnings,
            model=self.embedder.name if self.embedder is not None else None,
            index_model=index_model(engine, self.index) if exists else None,
            model_problem=self.model_problem or None,
        )

    async def close(self) -> None:
        if self.writes:  # a write that outlived its request finishes (or stops) before the engine closes
            log.info("waiting for %d write(s) still running", len(self.writes))
            _, left = await asyncio.wait(set(self.writes), timeout=self.settings.service.shutdown_timeout_s)
            if left:
                log.error("%d write(s) still running when the engine was closed", len(left))
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()  # its thread ends on its own; a shutdown does not wait for the engine
        connected, self._connected = self._connected, None
        if connected is None:
            return
        await connected.async_engine.close()  # the embedded one leaves the shared engine open
        await asyncio.to_thread(connected.engine.close)


def _retrieve(attempt: asyncio.Future[Connected]) -> None:
    """Mark a failed attempt's error as seen: the requests that waited for it got it, or stopped waiting."""
    if not attempt.cancelled():
        attempt.exception()


def index_model(engine: Engine, index: str) -> str | None:
    """The model the index records as having made its vectors (one line), or None when it records none."""
    recorded = recorded_identity(engine.get_mapping(index), index)
    return recorded.describe() if recorded is not None else None


@asynccontextmanager
async def opened(
    settings: Settings, embedder: Embedder | None, *, load_model: bool, unloaded_problem: str | None = None
) -> AsyncIterator[Backend]:
    """A process's backend: ``embedder`` as given (not closed), else the query model loaded here and closed
    on exit when ``load_model``; ``unloaded_problem`` is the warning when neither gives a model."""
    model, problem, owned = embedder, None, None
    if model is None and load_model:
        owned, problem = await asyncio.to_thread(partial(open_query_embedder, settings, serving=True))
        model = owned
    elif model is None:
        problem = unloaded_problem
    backend = Backend(settings, model, problem)
    try:
        yield backend
    finally:
        await backend.close()
        if owned is not None:
            await asyncio.to_thread(owned.close)  # stopping embedding processes takes a moment
