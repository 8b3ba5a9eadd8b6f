"""The link graph stage's reads: the links of the results, and the neighbours they lead to.

The arithmetic is pure (``esbridge.query.graph``, ``esbridge.query.link_rescore``); this module only
asks the engine for what it needs. A failed read skips the stage with a warning, never the search; so does
one that is not answered within the time the stage has (what is left of the search's, ``timeout_s``).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from esbridge import errors
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap, canonical_source
from esbridge.engines.base import AsyncEngine, Hit, SearchResult
from esbridge.ids import first_chunk
from esbridge.query import bodies
from esbridge.query.deadline import no_answer, time_left, with_timeout, within
from esbridge.query.graph import GraphExpansion, GraphOptions, expand, frontier, seed_docs
from esbridge.query.link_graph import LINK_FIELDS, Direction, link_map
from esbridge.query.link_rescore import Rescored, lift, rescore
from esbridge.query.models import Filters
from esbridge.query.timing import elapsed_ms

LINKED_CHUNKS = 500
"""How many chunks one graph-expansion request reads (the seeds', or those linking to them)."""

ADMIT_ROUNDS = 4
"""How many times an expansion is made, each time without the neighbours found missing or filtered out."""

NO_EXPANSION = GraphExpansion({}, {})


@dataclass(frozen=True)
class Expanded:
    """Neighbours added by graph expansion, with the stored fields of every chunk read on the way."""

    expansion: GraphExpansion = NO_EXPANSION
    sources: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """the neighbours' stored fields"""
    linked_sources: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """stored fields of the chunks read for their links (what the retrievers returned takes precedence)"""
    warnings: tuple[str, ...] = ()
    ms: float | None = None


@dataclass(frozen=True)
class Relinked:
    """The results re-scored by their links to each other (None: the links could not be read)."""

    rescored: Rescored | None
    warnings: tuple[str, ...] = ()
    ms: float | None = None


@asynccontextmanager
async def _limit(timeout_s: float | None) -> AsyncIterator[None]:
    """``within(timeout_s)``; with no time left, a timeout before any request is sent."""
    if timeout_s is not None and timeout_s <= 0:
        raise asyncio.TimeoutError
    async with within(timeout_s):
        yield


@dataclass
class _Read:
    """The link data read so far for one expansion, and whose links (as seed or frontier) were asked for."""

    links: dict[str, dict[str, float]]
    sources: dict[str, Mapping[str, Any]]
    warnings: tuple[str, ...]
    queried: set[str]

    def add(
        self,
        links: dict[str, dict[str, float]],
        sources: dict[str, Mapping[str, Any]],
        warnings: tuple[str, ...],
        *,
        queried: Sequence[str],
    ) -> None:
        self.links = {**self.links, **links}
        self.sources = {**sources, **self.sources}
        self.warnings += warnings
        self.queried.update(queried)


class LinkReader:
    """Reads links and neighbours from one index."""

    def __init__(self, engine: AsyncEngine, index: str, fields: FieldMap = DEFAULT_FIELD_MAP) -> None:
        self.engine = engine
        self.index = index
        self.fields = fields

    def _source(self, hit: Hit) -> Mapping[str, Any]:
        return canonical_source(hit.source, self.fields, hit.id)

    def _item_of(self, doc_id: str) -> str:
        # esbridge's chunks: a document enters as its first chunk; an attached index's documents are their hits.
        return first_chunk(doc_id) if self.fields is DEFAULT_FIELD_MAP else doc_id

    async def expand(
        self,
        scores: Mapping[str, float],
        doc_of: Mapping[str, str],
        filters: Filters,
        options: GraphOptions,
        *,
        timeout_s: float | None = None,
    ) -> Expanded:
        """The neighbours of the strongest results (``options.hops`` away) that exist and pass ``filters``, read
        within ``timeout_s`` (None: no limit of its own); no neighbours, with a warning, when they are not."""
        seeds = seed_docs(scores, doc_of, options)
        if not seeds:
            return Expanded()
        started = time.perf_counter()
        ends = math.inf if timeout_s is None else started + timeout_s
        try:
            async with _limit(timeout_s):
                read = _Read(*await self._links(seeds, filters, options.direction, ends), queried=set(seeds))
                admitted, admitted_sources = await self._neighbours(scores, doc_of, read, filters, options, ends)
        except errors.EngineError as exc:
            return Expanded(warnings=(f"graph expansion skipped: {exc}",), ms=elapsed_ms(started))
        except asyncio.TimeoutError:
            return Expanded(warnings=(f"graph expansion skipped: {no_answer(timeout_s or 0)}",), ms=elapsed_ms(started))
        warnings = tuple(dict.fromkeys(read.warnings))  # each request of a partial index says the same
        return Expanded(admitted, admitted_sources, read.sources, warnings, elapsed_ms(started))

    async def rescore(
        self,
        scores: Mapping[str, float],
        doc_of: Mapping[str, str],
        options: GraphOptions,
        *,
        timeout_s: float | None = None,
    ) -> Relinked:
        """The direct results re-scored by their links to each other (``rescore``, or ``lift`` below the kept
        top); their own links, read within ``timeout_s`` (None: no limit of its own), are all it needs."""
        started = time.perf_counter()
        # Every chunk of a document carries its links, and every document has a chunk 0.
        firsts = sorted({self._item_of(doc_of[item]) for item in scores})
        body = {"size": len(firsts), "_source": self._link_fields(), "query": self._ids_query(firsts)}
        try:
            async with _limit(timeout_s):
                result = await self.engine.search(self.index, with_timeout(body, timeout_s))
        except errors.EngineError as exc:
            return Relinked(None, (f"graph re-scoring skipped: {exc}",), elapsed_ms(started))
        except asyncio.TimeoutError:
            return Relinked(None, (f"graph re-scoring skipped: {no_answer(timeout_s or 0)}",), elapsed_ms(started))
        links = link_map(self._source(hit) for hit in result.hits)
        relink = lift if options.mode == "lift" else rescore
        warnings = (f"graph re-scoring: {result.partial}",) if result.partial else ()
        return Relinked(relink(scores, doc_of, links, options), warnings, elapsed_ms(started))

    def _link_fields(self) -> list[str]:
        if self.fields is DEFAULT_FIELD_MAP:
            return list(LINK_FIELDS)
        return [name for name in (self.fields.id, self.fields.links) if name]

    def _ids_query(self, items: Sequence[str]) -> dict[str, Any]:
        """Hits by their ids; an attached index with an id field holds a document's id there instead."""
        if self.fields is DEFAULT_FIELD_MAP or self.fields.id is None:
            return {"ids": {"values": list(items)}}
        return {"terms": {self.fields.id: list(items)}}

    async def _search(self, body: Mapping[str, Any], ends: float) -> SearchResult:
        """One read, carrying the time left until ``ends`` (``math.inf``: no limit) for the engine to answer in."""
        return await self.engine.search(self.index, with_timeout(body, time_left(ends)))

    async def _links(
        self, doc_ids: Sequence[str], filters: Filters, direction: Direction, ends: float
    ) -> tuple[dict[str, dict[str, float]], dict[str, Mapping[str, Any]], tuple[str, ...]]:
        """The links of ``doc_ids`` and of the documents linking to them, as ``direction`` needs. For
        ``both`` the two are separate requests, so that many backlinks cannot crowd out the seeds' own links."""
        sides: tuple[Direction, ...] = ("out", "in") if direction == "both" else (direction,)
        requests = [
            bodies.links_body(doc_ids, size=LINKED_CHUNKS, filters=filters, fields=self.fields, direction=side)
            for side in sides
        ]
        # Both answers are awaited before a failure is raised, so no request is left running unobserved.
        answers = await asyncio.gather(*(self._search(body, ends) for body in requests), return_exceptions=True)
        results: list[SearchResult] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
            results.append(answer)
        warnings: tuple[str, ...] = ()
        sources: dict[str, Mapping[str, Any]] = {}
        for result in results:
            if result.partial:
                warnings += (f"graph expansion: {result.partial}",)
            if result.total > len(result.hits):
                warnings += (
                    f"graph expansion read {len(result.hits)} of the {result.total} chunks linked with its seeds; "
                    "some neighbours may be missing",
                )
            for hit in result.hits:
                sources.setdefault(hit.id, self._source(hit))
        return link_map(sources.values()), sources, warnings

    async def _neighbours(
        self,
        scores: Mapping[str, float],
        doc_of: Mapping[str, str],
        read: _Read,
        filters: Filters,
        options: GraphOptions,
        ends: float,
    ) -> tuple[GraphExpansion, dict[str, Mapping[str, Any]]]:
        """The expansion over the links ``read`` holds (more are read into it for 2 hops) with only neighbours
        that exist and pass ``filters``. One a seed kept that is missing or filtered out frees its place under
        ``per_seed`` for the next, so the expansion is made again without it (at most ``ADMIT_ROUNDS`` times);
        with 2 hops the next may be two hops away, through documents whose links are not read yet. A
        neighbour on a shard that did not answer looks missing: the warnings say so."""
        excluded: set[str] = set()
        for _ in range(ADMIT_ROUNDS):
            wanted = frontier(scores, doc_of, read.links, options, exclude=excluded)
            if more := [doc_id for doc_id in wanted if doc_id not in read.queried]:
                read.add(*await self._links(more, filters, options.direction, ends), queried=more)
            expansion = expand(scores, doc_of, read.links, options, item_of=self._item_of, exclude=excluded)
            admitted, sources, partial = await self._admitted(expansion, filters, ends)
            read.warnings += (f"graph expansion: {partial}",) if partial else ()
            refused = {neighbour.doc_id for item, neighbour in expansion.neighbors.items() if item not in sources}
            if not refused:
                break
            excluded |= refused
        return admitted, sources

    async def _admitted(
        self, expansion: GraphExpansion, filters: Filters, ends: float
    ) -> tuple[GraphExpansion, dict[str, Mapping[str, Any]], str | None]:
        """The neighbours that exist and pass the request's filters, with their stored fields, and
        ``SearchResult.partial`` of the read.

        A link names a document, not a search hit: its target may be missing from the index (a dangling
        wikilink) or filtered out (deprecated, another tag), and must then not become a result.
        """
        if not expansion.scores:
            return expansion, {}, None
        query = bodies.filter_query(filters, self.fields)
        query["bool"]["filter"].append(self._ids_query(list(expansion.scores)))
        stored = (
            bodies.RESULT_FIELDS if self.fields is DEFAULT_FIELD_MAP else self.fields.stored_fields(with_texts=False)
        )
        body = {"size": len(expansion.scores), "_source": list(stored), "query": query}
        result = await self._search(body, ends)
        found: dict[str, Mapping[str, Any]] = {}
        for hit in result.hits:
            source = self._source(hit)
            # An attached index's neighbour is keyed by its document id, which is what the links named.
            found[hit.id if self.fields is DEFAULT_FIELD_MAP else str(source["doc_id"])] = source
        admitted = GraphExpansion(
            {item: score for item, score in expansion.scores.items() if item in found},
            {item: neighbor for item, neighbor in expansion.neighbors.items() if item in found},
        )
        return admitted, found, result.partial
