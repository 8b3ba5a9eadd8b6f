"""The search structures a process holds for one index (``DataDir``), and the error of an index deleted under it."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

from esbridge.engines.embedded.ann import VectorIndex
from esbridge.engines.embedded.lexical import LexicalIndex


class IndexGone(LookupError):
    """The index was deleted (by another thread or process) after its name was looked up."""


@dataclass
class Handles:
    """One index's search structures, current as of ``generation``."""

    generation: int
    lexical: LexicalIndex
    vectors: dict[str, VectorIndex]
    growing: list[Future[None]] = field(default_factory=list)
    """The graph updates of the last write, still running (see ``DataDir.ready``)."""
    name: str = ""

    def settle(self) -> None:
        """Wait for the graph updates under way; raise what one of them raised."""
        growing, self.growing = self.growing, []
        for update in growing:
            update.result()
