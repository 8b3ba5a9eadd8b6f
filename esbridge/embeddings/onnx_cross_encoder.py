"""A cross-encoder (query and text read together, one relevance logit out) on ONNX Runtime.

Nogueira and Cho 2019, "Passage Re-ranking with BERT": the pair goes in as ``[CLS] query [SEP] text
[SEP]`` and a classification head scores it. The logit goes through a sigmoid, as sentence-transformers'
``CrossEncoder.predict`` does for one-label models, so scores are in (0, 1) on either backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from esbridge.config.embedding import Precision
from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.onnx_runtime import OnnxSession, length_order
from esbridge.errors import RERANKER_ROLE as ROLE
from esbridge.errors import EmbeddingError, ModelUnavailable


def sigmoid(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exponential = math.exp(value)
    return exponential / (1.0 + exponential)


def _require_one_logit(session: OnnxSession, name: str) -> None:
    """An export that answers anything but one number per pair (an embedding model's token states) is no
    cross-encoder; scoring with it would fail on every search, so it is refused when it loads."""
    output = session.session.get_outputs()[0]
    shape = list(output.shape or [])
    if not shape or (len(shape) == 2 and (shape[1] == 1 or not isinstance(shape[1], int))):
        return  # its rank is not declared, or one logit (or an undeclared width) per pair
    raise ModelUnavailable(
        f"{session.files.onnx} answers {output.name} of shape [{', '.join(map(str, shape))}], not one relevance "
        "logit per (query, text) pair ([batch, 1]): it is no cross-encoder (an embedding model belongs in "
        "[embedding] model)",
        model=name,
        role=ROLE,
    )


SPLIT = 4
"""Batches a call's pairs are cut into at least (when there are that many): one search's re-ranking is one
call, and a single batch would run on one core however many there are. Fixed rather than taken from the
thread count, so a pair's score (int8 activations are quantized per batch) does not depend on the machine."""


def call_batch_size(pairs: int, largest: int) -> int:
    """Pairs per batch for one call of ``pairs``: at most ``largest``, small enough for ``SPLIT`` batches."""
    return max(1, min(largest, math.ceil(pairs / SPLIT)))


class OnnxCrossEncoder:
    """A ``Reranker`` running a one-label sequence-classification export (``logits`` of shape [batch, 1])."""

    def __init__(
        self,
        model: str,
        *,
        precision: Precision = "int8",
        batch_size: int = 16,
        max_length: int = 512,
        threads: int | None = None,
    ) -> None:
        try:
            files = locate_onnx(model, precision)
            self._session = OnnxSession(
                files, max_tokens=max_length, threads=threads, purpose="cross-encoder re-ranking"
            )
        except ModelUnavailable as exc:
            raise ModelUnavailable(exc.reason, model=exc.model or model, role=ROLE) from exc
        self.name = files.name
        self.batch_size = batch_size
        _require_one_logit(self._session, files.name)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        try:
            encodings = self._session.tokenizer.encode_batch([(query, text) for text in texts])
            order = length_order([len(encoding.ids) for encoding in encodings])
            size = call_batch_size(len(texts), self.batch_size)
            logits = [
                float(row[0])
                for output, _ in self._session.run([encodings[position] for position in order], size)
                for row in output
            ]
        except Exception as exc:  # onnxruntime's own exception types
            raise EmbeddingError(f"re-ranking {len(texts)} text(s) failed: {exc}", model=self.name, role=ROLE) from exc
        scores = [0.0] * len(texts)
        for logit, position in zip(logits, order, strict=True):
            scores[position] = sigmoid(logit)
        return scores
