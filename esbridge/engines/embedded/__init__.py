"""The embedded engine: SQLite (documents, FTS5 BM25) and numpy (exact kNN) in a local data directory."""

from esbridge.engines.embedded.engine import AsyncEmbeddedEngine, EmbeddedEngine

__all__ = ["AsyncEmbeddedEngine", "EmbeddedEngine"]
