"""Embedders built in a child process by ``ProcessEmbedder`` tests: module-level, so ``spawn`` can import them."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence

from esbridge.errors import ModelUnavailable

HANG = "hang for a minute"
FAIL = "raise an error"
DIE = "end the process"


class HashEmbedder:
    """Deterministic 4-dimensional vectors from a text's hash; its identity names the process it lives in."""

    name = "hash-embedder"
    dimension = 4
    max_tokens = 8

    def __init__(self) -> None:
        self.identity = f"hash-embedder@pid{os.getpid()}"

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if HANG in texts:
            time.sleep(60)
        if FAIL in texts:
            raise ValueError("this text cannot be embedded")
        if DIE in texts:
            os._exit(3)
        return [vector_of(text) for text in texts]


def vector_of(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [digest[i] / 255 for i in range(4)]


def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


def missing_model() -> HashEmbedder:
    raise ModelUnavailable("cannot be loaded from folder /nowhere", model="missing")


WHOAMI = "which process answers, slowly"


def pid_embedder() -> HashEmbedder:
    """Answers ``WHOAMI`` after 0.5 s with its process id as the first component."""

    class Pid(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            if WHOAMI in texts:
                time.sleep(0.5)
                return [[float(os.getpid()), 0.0, 0.0, 0.0] for _ in texts]
            return super().embed(texts)

    return Pid()


def embedder_while(folder: str) -> HashEmbedder:
    """Loads while ``folder`` exists: a model folder that goes away under a running server."""
    if not os.path.isdir(folder):
        raise ModelUnavailable(f"model folder {folder} does not exist", model="vanishing")
    return HashEmbedder()


def embedder_of_version(version_file: str) -> HashEmbedder:
    """Its weights are what ``version_file`` says when it loads: model files replaced under a running server."""
    from esbridge.embeddings.identity import ModelIdentity

    class Versioned(HashEmbedder):
        def __init__(self, weights: str) -> None:
            super().__init__()
            self.model_identity = ModelIdentity(
                name="versioned", weights=weights, dimension=4, pooling="mean", normalize=False, max_tokens=8
            )

    with open(version_file, encoding="utf-8") as handle:
        return Versioned(handle.read().strip())
