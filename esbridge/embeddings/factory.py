"""The embedder that settings describe: the configured model behind the on-disk cache."""

from __future__ import annotations

from esbridge.config.settings import EmbeddingSettings
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder


def open_embedder(settings: EmbeddingSettings) -> CachedEmbedder:
    """Load the model and open its cache; raises ``ModelUnavailable`` when there is no model to use.

    The model loads first, so a missing model never creates a cache directory.
    """
    model = SentenceTransformerEmbedder.from_settings(settings)
    return CachedEmbedder(model, EmbeddingCache(settings.cache_dir))
