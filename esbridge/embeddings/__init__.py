"""Embedding texts: the ``Embedder`` protocol, the sentence-transformers model and the on-disk cache."""

from esbridge.embeddings.base import Embedder
from esbridge.embeddings.cache import EmbeddingCache, default_cache_dir, text_key
from esbridge.embeddings.cached import CachedEmbedder, CacheStats
from esbridge.embeddings.factory import open_embedder
from esbridge.embeddings.resolve import BUNDLED_MODEL, ModelSource, bundled_model_dir, resolve_model
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder

__all__ = [
    "BUNDLED_MODEL",
    "CacheStats",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "ModelSource",
    "SentenceTransformerEmbedder",
    "bundled_model_dir",
    "default_cache_dir",
    "open_embedder",
    "resolve_model",
    "text_key",
]
