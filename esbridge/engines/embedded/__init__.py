"""The embedded engine: SQLite (documents), tantivy (BM25) and usearch (HNSW kNN) in a local data directory."""

from esbridge.engines.embedded.async_engine import AsyncEmbeddedEngine
from esbridge.engines.embedded.engine import EmbeddedEngine

__all__ = ["AsyncEmbeddedEngine", "EmbeddedEngine"]
