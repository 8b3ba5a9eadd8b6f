"""A model whose calls wait until the test lets them go: a test double of a stuck model session only."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tests.support.hashing import HashingEmbedder


class HeldEmbedder(HashingEmbedder):
    """Embeds as ``HashingEmbedder``, but a call with a text holding ``hang`` (every call when ``hang`` is None)
    first waits until ``released`` is set, ``wait_s`` at most. ``calls`` counts every call."""

    def __init__(self, released: threading.Event, *, hang: str | None = None, wait_s: float = 30) -> None:
        super().__init__()
        self.released, self.hang, self.wait_s = released, hang, wait_s
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.hang is None or any(self.hang in text for text in texts):
            self.released.wait(self.wait_s)
        return super().embed(texts)
