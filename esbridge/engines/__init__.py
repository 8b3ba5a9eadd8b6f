"""Engine adapters: one per engine, all behind the ``Engine`` protocol."""

from esbridge.engines.base import AsyncEngine, BulkAction, BulkResult, Engine, Hit, SearchResult
from esbridge.engines.capabilities import Capabilities
from esbridge.engines.factory import connect, connect_async, prepare, resolve_kind

__all__ = [
    "AsyncEngine",
    "BulkAction",
    "BulkResult",
    "Capabilities",
    "Engine",
    "Hit",
    "SearchResult",
    "connect",
    "connect_async",
    "prepare",
    "resolve_kind",
]
