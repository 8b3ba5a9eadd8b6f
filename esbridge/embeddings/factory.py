"""The embedder that settings describe: the configured model behind the on-disk cache."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Protocol

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import Embedder, close_model
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.plugins import EMBEDDER_GROUP, Registry


class EmbedderFactory(Protocol):
    def __call__(self, settings: EmbeddingSettings) -> Embedder: ...


EMBEDDERS: Registry[EmbedderFactory] = Registry("embedder", EMBEDDER_GROUP)


BUILTIN_PROVIDER = "sentence-transformers"


def load_model(settings: EmbeddingSettings) -> Embedder:
    """The configured model itself, with no cache in front (module-level, so a child process can call it).

    The built-in provider runs on the configured ``backend``: torch (sentence-transformers) or ONNX Runtime.
    """
    if settings.provider == BUILTIN_PROVIDER and settings.backend == "onnx":
        from esbridge.embeddings.onnx_runtime import OnnxEmbedder

        return OnnxEmbedder.from_settings(settings)
    return EMBEDDERS.get_named(settings.provider)(settings)


def open_embedder(settings: EmbeddingSettings, *, processes: int = 0, reply_timeout_s: float = 60.0) -> CachedEmbedder:
    """Load the model and open its cache; raises ``ModelUnavailable`` when there is no model to use.

    ``processes`` > 0 runs the model in that many child processes (``ProcessEmbedder``, a child that
    gives no answer within ``reply_timeout_s`` is replaced), for processes that serve queries. The model
    loads first, so a missing model never creates a cache directory.
    """
    return CachedEmbedder(_model(settings, processes, reply_timeout_s), EmbeddingCache(settings.cache_dir))


@contextmanager
def uncached_model(settings: EmbeddingSettings, *, processes: int = 0) -> Iterator[Embedder]:
    """The model with no cache in front (to time embedding itself), in ``processes`` child processes
    when that is above 0; their children are stopped on exit."""
    model = _model(settings, processes, 60.0)
    try:
        yield model
    finally:
        close_model(model)


def _model(settings: EmbeddingSettings, processes: int, reply_timeout_s: float) -> Embedder:
    if processes < 1:
        return load_model(settings)
    from esbridge.embeddings.worker import ProcessEmbedder

    loader = partial(load_model, settings)
    return ProcessEmbedder(loader, model=settings.model, workers=processes, reply_timeout_s=reply_timeout_s)
