"""End-to-end search latency per mode, measured in one run on the same index and queries (``esbridge bench``).

Modes (``MODES``), interleaved query by query so that load and caches affect them alike:

- ``bm25``: the BM25 request alone; ``knn``: the kNN request alone, its vector computed beforehand;
  ``msearch``: both in one ``_msearch`` round trip; ``embed``: embedding the query;
- ``hybrid``: the whole client-side pipeline as configured; ``hybrid_concurrent`` / ``hybrid_msearch``:
  the same with ``pipeline.execution`` forced to concurrent requests / one ``_msearch``;
- ``native``: the whole pipeline with the engine fusing (``SearchRequest.mode = "native"``), measured
  only where the engine answers natively; otherwise skipped with the reason.

Result and embedding caches are off. With ``concurrency`` N, N workers take queries from one queue.

A failed search does not stop the run: it is counted per mode with the second of the run it happened in
(``failures``), and so is an answer that lacked shards (``partial``), so a run during a node's fail-over
reports what the fail-over cost and when it ended.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from esbridge.config.pipeline import CacheSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder, start_embedding
from esbridge.engines import connect_async, prepare, resolve_kind
from esbridge.engines.base import SearchResult
from esbridge.engines.capabilities import Capabilities
from esbridge.errors import ConfigError, EsbridgeError
from esbridge.evaluation.session import probe_native
from esbridge.query import bodies, retrievers
from esbridge.query.factory import build_searcher
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.retrievers import RetrievalContext

MODES = ("bm25", "knn", "msearch", "embed", "hybrid", "hybrid_concurrent", "hybrid_msearch", "native")
DEFAULT_MODES = ("bm25", "knn", "embed", "hybrid", "native")


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(fraction: float) -> float:  # nearest rank: the smallest sample with at least this fraction at or below it
        return round(ordered[max(0, math.ceil(round(fraction * len(ordered), 9)) - 1)], 2)

    return {"p50": round(statistics.median(ordered), 2), "p95": at(0.95), "p99": at(0.99), "n": len(ordered)}


def ratios(p50: Mapping[str, float]) -> dict[str, float]:
    """The ratios between modes that the goals are stated in, for the modes measured."""
    found: dict[str, float] = {}
    single = max(p50.get("bm25", 0.0), p50.get("knn", 0.0))
    for mode in ("knn", "msearch", "hybrid", "hybrid_concurrent", "hybrid_msearch", "native"):
        if mode in p50 and p50.get("bm25"):
            found[f"{mode} / bm25"] = round(p50[mode] / p50["bm25"], 3)
    if single and "embed" in p50:
        budget = 1.1 * single + p50["embed"]
        for mode in ("hybrid", "hybrid_concurrent", "hybrid_msearch", "native"):
            if mode in p50:
                found[f"{mode} / (1.1 x max(bm25, knn) + embed)"] = round(p50[mode] / budget, 3)
    if "native" in p50 and "hybrid" in p50:
        found["native / hybrid"] = round(p50["native"] / p50["hybrid"], 3)
    if "msearch" in p50 and single:
        found["msearch / max(bm25, knn)"] = round(p50["msearch"] / single, 3)
    return found


@dataclass(frozen=True)
class Failure:
    at_s: float
    """seconds since the measured part of the run started"""
    mode: str
    reason: str


@dataclass
class LatencyReport:
    engine: str
    queries: int
    concurrency: int
    wall_s: float
    modes: dict[str, dict[str, float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    partial: list[Failure] = field(default_factory=list)
    """answers that lacked shards or were cut short by the engine's time limit, and hybrid searches answered by one
    retriever (the other failed): timed, but not what their mode names"""
    started: float = 0.0
    """``time.perf_counter()`` when the measured part began (``at_s`` counts from it)"""

    def errors_by_mode(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for failure in self.failures:
            counts[failure.mode] = counts.get(failure.mode, 0) + 1
        return counts

    @property
    def ratios(self) -> dict[str, float]:
        return ratios({mode: values["p50"] for mode, values in self.modes.items()})

    def as_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "queries": self.queries,
            "concurrency": self.concurrency,
            "wall_s": self.wall_s,
            "modes": self.modes,
            "ratios": self.ratios,
            "skipped": self.skipped,
            "errors": self.errors_by_mode(),
            "partial": len(self.partial),
            "failures": [vars(failure) for failure in self.failures[:50]],
            "last_error_at_s": self.failures[-1].at_s if self.failures else None,
            "last_partial_at_s": self.partial[-1].at_s if self.partial else None,
        }


def measure(
    settings: Settings,
    texts: Sequence[str],
    embedder: Embedder,
    *,
    modes: Sequence[str] = DEFAULT_MODES,
    concurrency: int = 1,
    warmup: int = 10,
    top_n: int = 10,
    progress: Callable[[int], None] = lambda n: None,
) -> LatencyReport:
    if not modes:
        raise ConfigError(f"no mode named; known: {', '.join(MODES)}")
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ConfigError(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    skipped: dict[str, str] = {}
    capabilities: Capabilities | None = None
    if "native" in modes:
        capabilities, reason = probe_native(settings)
        if reason:
            skipped["native"] = f"not available on this engine: {reason}"
    chosen = [mode for mode in modes if mode not in skipped]
    return asyncio.run(
        _measure(settings, texts, embedder, chosen, skipped, concurrency, warmup, top_n, progress, capabilities)
    )


async def _measure(
    settings: Settings,
    texts: Sequence[str],
    embedder: Embedder,
    modes: list[str],
    skipped: dict[str, str],
    concurrency: int,
    warmup: int,
    top_n: int,
    progress: Callable[[int], None],
    capabilities: Capabilities | None = None,
) -> LatencyReport:
    kind = resolve_kind(settings)
    engine = connect_async(settings, kind=kind)
    no_cache = settings.pipeline.model_copy(update={"cache": CacheSettings(embeddings=0, results=0)})

    def searcher(**update: Any) -> HybridSearcher:
        return build_searcher(
            engine,
            settings.index,
            embedder,
            no_cache.model_copy(update=update),
            num_candidates=settings.mapping.hnsw_ef_search,
            probe=capabilities,
            fields=settings.field_map,
        )

    searchers = {
        "hybrid": searcher(),
        "hybrid_concurrent": searcher(execution="concurrent"),
        "hybrid_msearch": searcher(execution="msearch"),
        "native": searcher(),
    }
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    top_k = settings.pipeline.top_k(top_n)
    filters = Filters()

    failures: list[Failure] = []
    partials: list[Failure] = []

    async def timed(mode: str, sink: dict[str, list[float]], call: Callable[[], Awaitable[Any]]) -> Any:
        started = time.perf_counter()
        try:
            result = await call()
        except EsbridgeError as exc:
            if mode == "native" or not sink:  # native: decided below; warm-up: not measured
                raise
            failures.append(Failure(round(started - run_started, 2), mode, str(exc)[:300]))
            return None
        if mode in sink:
            sink[mode].append((time.perf_counter() - started) * 1000)
            why = _partial(result)
            if why:
                partials.append(Failure(round(started - run_started, 2), mode, why))
        return result

    fields = settings.field_map
    displayed = bodies.DISPLAY_FIELDS if not settings.attached else tuple(fields.stored_fields(with_texts=False))

    async def one(text: str, sink: dict[str, list[float]]) -> None:
        # The fields the pipeline itself asks for (no chunk texts with the default fusion), so modes compare alike.
        context = RetrievalContext(
            engine.dialect, text, top_k, filters, settings.mapping.hnsw_ef_search, displayed, settings.field_map
        )
        lexical = retrievers.bm25.body(context, None)
        if "bm25" in modes:
            await timed("bm25", sink, lambda: engine.search(settings.index, lexical))
        vector = await timed("embed", sink, lambda: start_embedding(embedder, [text]))
        if vector is None:
            return
        knn = retrievers.knn.body(context, vector[0])
        if "knn" in modes:
            await timed("knn", sink, lambda: engine.search(settings.index, knn))
        if "msearch" in modes:
            await timed("msearch", sink, lambda: engine.msearch(settings.index, [lexical, knn]))
        client = SearchRequest(query=text, top_n=top_n, mode="client")
        for mode in ("hybrid", "hybrid_concurrent", "hybrid_msearch"):
            if mode in modes:
                await timed(mode, sink, partial(searchers[mode].search, client))
        if "native" in modes and "native" not in skipped:
            request = SearchRequest(query=text, top_n=top_n, mode="native")
            try:
                response = await timed("native", sink, lambda: searchers["native"].search(request))
            except EsbridgeError as exc:
                skipped["native"] = f"not available on this engine: {exc}"
                return
            if response.search_mode != "native-hybrid":
                skipped["native"] = (
                    "not available on this engine: it answered with client-side fusion "
                    f"(search_mode {response.search_mode})"
                )

    queue: asyncio.Queue[str] = asyncio.Queue()
    for text in texts:
        queue.put_nowait(text)

    async def worker() -> None:
        while not queue.empty():
            text = queue.get_nowait()
            await one(text, samples)
            progress(1)

    run_started = time.perf_counter()
    try:
        await prepare(engine, settings.index)  # a build of the index is no search to time
        for text in texts[:warmup]:
            await one(text, {})
        run_started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await engine.close()
    wall_s = round(time.perf_counter() - run_started, 2)
    report = LatencyReport(kind, len(texts), concurrency, wall_s, skipped=dict(skipped))
    report.started = run_started
    report.failures = sorted(failures, key=lambda failure: failure.at_s)
    report.partial = sorted(partials, key=lambda failure: failure.at_s)
    report.modes = {mode: percentiles(values) for mode, values in samples.items() if values and mode not in skipped}
    return report


def _partial(result: Any) -> str | None:
    """Why a measured answer (a SearchResult, a list of them, or a SearchResponse) lacked documents, if it did."""
    if isinstance(result, SearchResponse):
        if result.search_mode in ("lexical-only", "semantic-only"):  # a hybrid search degraded: kNN or BM25 failed
            return "; ".join([f"answered {result.search_mode}", *result.warnings])
        if not result.partial:
            return None
        return "; ".join(warning for warning in result.warnings if "partial results" in warning) or "partial"
    if isinstance(result, SearchResult):
        return result.partial
    if isinstance(result, list):
        return next((item.partial for item in result if isinstance(item, SearchResult) and item.partial), None)
    return None
