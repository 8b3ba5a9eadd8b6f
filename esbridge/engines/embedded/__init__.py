"""The embedded engine: SQLite (documents), tantivy (BM25) and usearch (HNSW kNN) in a local data directory."""

import contextlib

# usearch loads NumKong with RTLD_GLOBAL, and onnxruntime 1.23 and later then crashes (SIGSEGV) while
# loading its own library, so a process that uses the embedded engine and the ONNX embedder loads
# onnxruntime first when it is installed (about 0.2 s).
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401

from esbridge.engines.embedded.async_engine import AsyncEmbeddedEngine
from esbridge.engines.embedded.engine import EmbeddedEngine

__all__ = ["AsyncEmbeddedEngine", "EmbeddedEngine"]
