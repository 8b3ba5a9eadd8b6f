"""What the rest of esbridge needs from an embedding model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension.

    ``identity`` changes whenever the vectors could change (another model, other weights, another
    dimension), so it can key caches and be stored next to indexed vectors; ``name`` is for people.
    """

    @property
    def name(self) -> str: ...

    @property
    def identity(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """Tokens the model reads per text; the rest of a longer text is cut off before embedding."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for ``text``, on the same scale as ``max_tokens``."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalized vector per text, in input order."""
        ...


def close_model(model: Embedder) -> None:
    """Release what ``model`` holds, if it holds anything (a ``ProcessEmbedder``'s children)."""
    close = getattr(model, "close", None)
    if callable(close):
        close()


def start_embedding(model: Embedder, texts: Sequence[str]) -> asyncio.Future[list[list[float]]]:
    """``texts``' vectors as a future of the running loop, ``embed`` handed to the loop's default executor
    at once (``asyncio.to_thread`` would wait for a loop turn). A search and ``esbridge bench`` both embed
    through this, so the bench times the embedding the way a search pays for it."""
    return asyncio.get_running_loop().run_in_executor(None, model.embed, list(texts))
