"""The one interface every engine adapter implements, and the plain data it speaks.

An adapter executes requests; it does not decide what to ask. Request bodies are built by pure
functions (``esbridge.engines.dialect`` and, later, ``esbridge.query``) in the engine's dialect and
handed to ``search``/``msearch`` as mappings, so they can be tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from esbridge.engines.capabilities import Capabilities

Dialect = Literal["opensearch", "elasticsearch"]
JSON = dict[str, Any]


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    source: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResult:
    hits: Sequence[Hit]
    total: int
    took_ms: int
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class BulkAction:
    """One write in a bulk request: ``index`` a whole document, or ``delete`` one by id."""

    op: Literal["index", "delete"]
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


@dataclass(frozen=True)
class BulkResult:
    succeeded: Sequence[str]
    failed: Sequence[BulkItemFailure]


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

    async def close(self) -> None: ...
