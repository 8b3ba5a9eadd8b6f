"""The embedder that settings describe: the configured model behind the on-disk cache."""

from __future__ import annotations

from typing import Protocol

from esbridge.config.settings import EmbeddingSettings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.plugins import EMBEDDER_GROUP, Registry


class EmbedderFactory(Protocol):
    def __call__(self, settings: EmbeddingSettings) -> Embedder: ...


EMBEDDERS: Registry[EmbedderFactory] = Registry("embedder", EMBEDDER_GROUP)


def open_embedder(settings: EmbeddingSettings) -> CachedEmbedder:
    """Load the model and open its cache; raises ``ModelUnavailable`` when there is no model to use.

    The model loads first, so a missing model never creates a cache directory.
    """
    model = EMBEDDERS.get_named(settings.provider)(settings)
    return CachedEmbedder(model, EmbeddingCache(settings.cache_dir))
