"""``esbridge`` with a model that never returns a vector of a query holding ``HANG`` (hashing-32 otherwise), as
provider ``hashing``: ``python -m tests.support.hung_model_cli search ...``. A test double of the model only."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from tests.support.hashing import HashingEmbedder

HANG = "glacier"


class HungEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(HANG in text for text in texts):
            threading.Event().wait()  # a stuck session: the call never returns
        return super().embed(texts)


if __name__ == "__main__":
    EMBEDDERS["hashing"] = lambda settings: HungEmbedder()
    main(prog_name="esbridge")
