"""The one interface every engine adapter implements, and the plain data it speaks.

An adapter executes requests; it does not decide what to ask. Request bodies are built by pure
functions (``esbridge.engines.dialect`` and, later, ``esbridge.query``) in the engine's dialect and
handed to ``search``/``msearch`` as mappings, so they can be tested without a server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from esbridge import errors
from esbridge.engines.capabilities import Capabilities
from esbridge.engines.index_templates import AliasTemplate

Dialect = Literal["opensearch", "elasticsearch"]
JSON = dict[str, Any]


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    source: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardStatus:
    """The ``_shards`` section of a search answer: how many of the index's shards answered."""

    total: int
    successful: int
    skipped: int = 0
    failed: int = 0
    reasons: tuple[str, ...] = ()
    """distinct failure types or reasons the engine gave, first seen first"""

    @property
    def missing(self) -> int:
        """Shards whose documents are not in the answer.

        Elasticsearch counts a shard with no active copy as ``failed``; OpenSearch leaves it out of
        ``failed`` and only of ``successful`` (``total 3, successful 1, failed 0``), so both are read.
        A skipped shard (nothing in it could match) is counted among the successful by both engines.
        """
        return max(self.total - self.successful, self.failed, 0)

    @property
    def problem(self) -> str | None:
        """How many shards did not answer and why, or None when every shard answered."""
        if not self.missing:
            return None
        why = f" ({'; '.join(self.reasons)})" if self.reasons else ""
        return f"{self.missing} of {self.total} shards did not answer{why}"


@dataclass(frozen=True)
class SearchResult:
    hits: Sequence[Hit]
    total: int
    took_ms: int
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    shards: ShardStatus | None = None
    timed_out: bool = False
    """the engine stopped collecting at the request's ``timeout``: some shards answered with what they had"""

    @property
    def partial(self) -> str | None:
        """Why this answer may lack documents that match, or None when every shard answered in full."""
        problems: list[str] = []
        if self.shards is not None and self.shards.problem:
            problems.append(self.shards.problem)
        if self.timed_out:
            problems.append("the engine's time limit cut the search short")
        if not problems:
            return None
        return f"partial results: {' and '.join(problems)}; documents on those shards are missing from the answer"


@dataclass(frozen=True)
class BulkAction:
    """One write in a bulk request: ``index`` a whole document, ``update`` some fields, or ``delete`` by id."""

    op: Literal["index", "update", "delete"]
    id: str
    document: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class BulkItemFailure:
    id: str
    status: int
    reason: str

    @property
    def retryable(self) -> bool:
        return self.status in (429, 502, 503, 504)

    @property
    def write_blocked(self) -> bool:
        """Refused by the index's write block (``index.blocks.write``), which ``esbridge index reindex`` sets.

        Not retryable: a reindex may take hours, and an interrupted one leaves the block until it is run again.
        """
        return self.status == 403 and "cluster_block_exception" in self.reason and "write" in self.reason


@dataclass(frozen=True)
class BulkResult:
    succeeded: Sequence[str]
    failed: Sequence[BulkItemFailure]


@dataclass(frozen=True)
class IndexInfo:
    name: str
    docs: int
    size_bytes: int
    health: str | None = None
    closed: bool = False
    """closed on the engine (``POST <index>/_close``): it holds its documents but answers nothing, counts none"""


@runtime_checkable
class Engine(Protocol):
    """A search engine esbridge can manage indices in and query (synchronous)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def url(self) -> str:
        """The engine URL without credentials, for messages."""
        ...

    def probe(self) -> Capabilities: ...

    def index_exists(self, index: str) -> bool: ...

    def create_index(self, index: str, body: Mapping[str, Any]) -> None: ...

    def delete_index(self, index: str, *, missing_ok: bool = False) -> bool:
        """Delete ``index``; return whether it existed. A missing index raises unless ``missing_ok``."""
        ...

    def refresh(self, index: str) -> None: ...

    def list_indices(self, pattern: str) -> list[IndexInfo]:
        """Concrete indices whose names match ``pattern`` (``*`` wildcards), open or closed, sorted by name."""
        ...

    def alias_targets(self, alias: str) -> list[str]:
        """The concrete indices ``alias`` points to; empty when there is no such alias."""
        ...

    def update_aliases(self, actions: Sequence[Mapping[str, Any]]) -> None:
        """Apply alias ``add``/``remove`` actions atomically, in one request."""
        ...

    def get_mapping(self, index: str) -> dict[str, Any]:
        """The mapping of ``index`` (an alias resolves to its single concrete index)."""
        ...

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        """The mapping of each concrete index ``index`` names (an index, an alias, a data stream), by index name."""
        ...

    def get_index_settings(self, index: str) -> dict[str, Any]:
        """The ``index`` settings object of ``index``, as the engine reports it."""
        ...

    def put_mapping(self, index: str, properties: Mapping[str, Any]) -> None: ...

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        """Replace the mapping's ``_meta`` of ``index`` (a concrete index) with ``meta``; fields are untouched."""
        ...

    def set_write_block(self, index: str, blocked: bool) -> None:
        """Refuse (``blocked``) or accept writes to ``index`` again; ``get_index_settings`` reports the block.

        A blocked index refuses every bulk item with status 403 and a ``cluster_block_exception``; reads,
        mapping changes, alias changes and deleting the index still work. Blocking returns once the writes
        in flight have finished, so nothing lands after it.
        """
        ...

    def count(self, index: str) -> int:
        """How many documents ``index`` holds; ``IndexUnavailable`` when some shard did not answer, since a
        count of part of the index would be taken for the whole (``search`` with ``track_total_hits`` gives the
        count of what answered with ``SearchResult.partial``)."""
        ...

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        """Copy every document from ``source`` to ``dest`` on the server; return how many were copied. A server-side
        copy that makes no progress for ``timeout_s`` (default: the ``reindex_stall_timeout_s`` setting) is cancelled
        and raises ``EngineTimeout``. ``dest`` must exist (the caller creates it with its mapping): a missing one
        raises ``IndexNotFound`` and one with the flood-stage block ``IndexWriteBlocked``, before any copy. Other
        tasks copying into ``dest`` are cancelled; a task that may still copy (its cancel not confirmed, or not sent
        as that block refuses its writes) raises ``ReindexTaskRunning``, naming it."""
        ...

    def scan(
        self, index: str, query: Mapping[str, Any], fields: Sequence[str], *, sort_field: str, page_size: int = 1000
    ) -> Iterator[Hit]:
        """Every hit of ``query`` with only ``fields`` from the source, paged by ``sort_field``."""
        ...

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        """Apply ``actions``; per-document failures are reported, not raised."""
        ...

    def search(self, index: str, body: Mapping[str, Any]) -> SearchResult: ...

    def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        """Run several searches in one round trip; a failed search yields its translated error."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class AsyncEngine(Protocol):
    """The query path of an engine, for concurrent retrieval."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def url(self) -> str: ...

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult: ...

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        """Several searches in one round trip; a failed one yields its translated error."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class Prepares(Protocol):
    """An engine whose index may need time before it answers at once (the embedded engine building a structure
    whole); a one-shot caller waits for that here, before searches whose deadlines it would outlast."""

    async def prepare(self, index: str) -> None: ...


@runtime_checkable
class SearchPipelineStore(Protocol):
    """Named search pipelines stored on the engine (OpenSearch); ``esbridge pipeline`` manages them."""

    def get_search_pipeline(self, name: str) -> dict[str, Any] | None:
        """The stored definition of pipeline ``name``, or None when there is none."""
        ...

    def put_search_pipeline(self, name: str, body: Mapping[str, Any]) -> None: ...

    def delete_search_pipeline(self, name: str) -> bool:
        """Delete pipeline ``name``; False when there was none."""
        ...


@runtime_checkable
class IndexTemplates(Protocol):
    """Composable index templates (OpenSearch, Elasticsearch): a data stream's next backing index, or the index an
    alias is rolled over to, takes its mapping, ``_meta`` included, from the template that matches its name, not
    from the older indices."""

    def data_stream_template(self, name: str) -> str | None:
        """The template the next rollover of data stream ``name`` takes its mapping from; None when ``name`` is
        no data stream (or the engine has none)."""
        ...

    def alias_template(self, alias: str) -> AliasTemplate | None:
        """The composable template ``alias``'s next rollover would make its new index from (the engine's choice by
        ``index_patterns`` and priority), or why none can carry a model record; None when ``alias`` is no alias
        or has no write index named as a rollover names it (``<prefix>-<digits>``)."""
        ...

    def get_index_template(self, name: str) -> dict[str, Any]:
        """Template ``name``'s body as ``put_index_template`` takes it."""
        ...

    def put_index_template(self, name: str, body: Mapping[str, Any]) -> None: ...

    def resolved_template_mappings(self, name: str) -> dict[str, Any]:
        """The mapping an index made by template ``name`` now gets, its component templates merged in."""
        ...


def rollover_template(engine: object, alias: str) -> AliasTemplate | None:
    """The template ``alias``'s next rollover makes its index from, looked for only to name a refusal's way out:
    an engine without templates, or one whose templates cannot be read, leaves the refusal as it is."""
    if not isinstance(engine, IndexTemplates):
        return None
    try:
        return engine.alias_template(alias)
    except errors.EngineError:
        return None
