"""Embedding and cross-encoding with ONNX Runtime and a fast (Rust) tokenizer, without torch.

A transformer encoder exported to ONNX computes the same token states as under torch; what
sentence-transformers adds on top (pooling, normalization) is a few lines of numpy here, as the
model's profile says. Texts are sorted by token count and batched in that order, so a batch pads to
about its own length instead of the longest text of the call (sentence-transformers sorts the same
way). onnxruntime, tokenizers and numpy are imported when a model is loaded (base dependencies of esbridge).

Several CPU threads work on several batches at once, each batch on one thread, rather than on one batch
together: ONNX Runtime's threads synchronise after every operator and spin while they wait, which cost
half as much CPU again per chunk as single-threaded runs on 2 cores, CPU that an ingest's bulk writes
and the engine beside it need (docs/model-speed.md, "Threads"). Batches are the same whatever the thread
count, so a text's int8 vector does not depend on it. By default a batch is one text (``BATCH_SIZE``): on
CPU that embeds the most texts a second, with no padding, and int8 activations, quantized with one scale
per batch, then depend on the text alone, so a text gets the same vector in every run and every batch
(docs/model-speed.md, "Batch size").
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Any

from esbridge.config.embedding import EmbeddingSettings, Precision
from esbridge.embeddings.base import check_max_tokens
from esbridge.embeddings.identity import ModelIdentity
from esbridge.embeddings.model_store import OnnxFiles, locate_onnx
from esbridge.embeddings.profiles import ModelProfile, profile_for
from esbridge.embeddings.resolve import files_fingerprint
from esbridge.embeddings.weights import weights_digest
from esbridge.errors import ConfigError, DependencyMissing, EmbeddingError, ModelUnavailable
from esbridge.ids import shown_path

ONNX_MAX_TOKENS = 512
"""Tokens read per text by an ONNX export whose profile does not say: BERT's position embeddings."""
BATCH_SIZE = 1
"""Texts a session call embeds unless ``[embedding] batch_size`` says otherwise."""

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def _imports(purpose: str) -> tuple[Any, Any]:
    try:
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise DependencyMissing("onnxruntime", extra="onnx", purpose=purpose) from exc
    return onnxruntime, tokenizers


def _reason(exc: Exception) -> str:
    # The libraries' messages repeat the file's name as it is.
    return shown_path(f"{type(exc).__name__}: {exc}")


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class OnnxSession:
    """An ONNX encoder and its tokenizer: token ids in, the model's first output out, batched by length.

    ``threads`` batches run at once (none: one per available core), each on one thread of its own.
    """

    def __init__(self, files: OnnxFiles, *, max_tokens: int, threads: int | None, purpose: str) -> None:
        onnxruntime, tokenizers = _imports(purpose)
        self.files = files
        self.threads = threads or available_cores()
        self._pool = (
            ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="esbridge-onnx")
            if self.threads > 1
            else None
        )
        try:
            self.tokenizer = tokenizers.Tokenizer.from_file(str(files.tokenizer))
            self.counter = tokenizers.Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:  # not JSON, or no tokenizer tokenizers can build
            raise ModelUnavailable(
                f"cannot load {shown_path(files.tokenizer)}: {_reason(exc)}", model=files.name
            ) from exc
        try:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.log_severity_level = 4  # fatal only: a failed run is raised to the caller, who reports it once
            self.session = onnxruntime.InferenceSession(
                str(files.onnx), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # corrupt files, unsupported operators: there is no model
            raise ModelUnavailable(f"cannot load {shown_path(files.onnx)}: {_reason(exc)}", model=files.name) from exc
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.counter.no_padding()
        self.counter.no_truncation()
        self.inputs = {item.name for item in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise ModelUnavailable(f"{files.onnx} takes no {', '.join(sorted(missing))} input", model=files.name)

    def count_tokens(self, text: str) -> int:
        return len(self.counter.encode(text).ids)

    def run(self, encodings: Sequence[Any], batch_size: int) -> list[tuple[NDArray[np.float32], NDArray[np.int64]]]:
        """(first output, attention mask) per batch, in the order of the batches of ``length_order``."""
        batches = [encodings[start : start + batch_size] for start in range(0, len(encodings), batch_size)]
        if self._pool is None or len(batches) < 2:
            return [self._run_batch(batch) for batch in batches]
        return list(self._pool.map(self._run_batch, batches))

    def close(self) -> None:
        """Ends the threads that run batches side by side; later calls run their batches one after another."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _run_batch(self, batch: Sequence[Any]) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        import numpy as np

        width = max(len(encoding.ids) for encoding in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for row, encoding in enumerate(batch):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
            types[row, :length] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = types
        output = self.session.run(None, feed)[0]
        return np.asarray(output, dtype=np.float32), mask


def length_order(lengths: Sequence[int]) -> list[int]:
    """Positions sorted by length, longest first (ties in input order): batches of similar length."""
    return sorted(range(len(lengths)), key=lambda position: (-lengths[position], position))


def pool(states: NDArray[np.float32], mask: NDArray[np.int64], pooling: str) -> NDArray[np.float32]:
    """One vector per row: the first ([CLS]) token's state, or the mean over real (unmasked) tokens.

    Mean pooling is sentence-transformers' ``Pooling(pooling_mode_mean_tokens=True)`` (Reimers and
    Gurevych 2019, "Sentence-BERT", section 3); a 2-d output is already pooled and passes through.
    """
    import numpy as np

    if states.ndim == 2:
        return states
    if pooling == "cls":
        return states[:, 0, :]
    weights = mask[:, :, None].astype(np.float32)
    summed = (states * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled: NDArray[np.float32] = summed / counts
    return pooled


def normalize_rows(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: NDArray[np.float32] = vectors / np.clip(norms, 1e-12, None)
    return result


class OnnxEmbedder:
    """An ``Embedder`` running an ONNX export of a sentence encoder with ONNX Runtime.

    Pooling, normalization and the token limit come from ``profile``; prompts are the caller's (they
    are applied by ``esbridge.embeddings.base.embed_passages`` and ``start_embedding``).
    """

    def __init__(
        self,
        model: str,
        *,
        precision: Precision = "fp32",
        profile: ModelProfile | None = None,
        dimension: int | None = None,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        files = locate_onnx(model, precision)
        self.profile = profile or profile_for(files.name)
        self.precision = precision
        self._max_tokens = self.profile.max_tokens or ONNX_MAX_TOKENS
        self._session = OnnxSession(files, max_tokens=self._max_tokens, threads=threads, purpose="embedding")
        self._batch_size = batch_size
        self._name = files.name
        self._dimension = len(self._embed_raw(["dimension probe"])[0])
        if self._dimension == 1:
            output = self._session.session.get_outputs()[0]
            raise ModelUnavailable(
                f"{files.onnx} answers one number per text ({output.name} [batch, 1]), as a cross-encoder does: "
                "it scores (query, text) pairs and makes no vectors; name it in [pipeline.rerank] model, and an "
                "embedding model here",
                model=self._name,
            )
        if dimension is not None and dimension != self._dimension:
            raise ConfigError(
                f"embedding.dimension is {dimension}, but model {self._name!r} produces "
                f"{self._dimension}-dimensional vectors; remove the setting or pick a matching model"
            )
        self._identity = f"{self._name}+onnx-{precision}@{_fingerprint(files, self.profile)}/{self._dimension}"
        if precision == "int8" and batch_size > 1:
            # Such a vector depends on the texts batched with it: cached apart, it never reaches a run of one text a
            # call, whose vectors depend on their own text alone (docs/model-speed.md, "Batch size").
            self._identity += batched_suffix(batch_size)

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> OnnxEmbedder:
        embedder = cls(
            settings.model,
            precision=settings.precision,
            profile=settings_profile(settings),
            dimension=settings.dimension,
            batch_size=BATCH_SIZE if settings.batch_size is None else settings.batch_size,
            threads=settings.threads,
        )
        check_max_tokens(embedder, settings.max_tokens)
        return embedder

    @property
    def name(self) -> str:
        return self._name

    @property
    def location(self) -> str:
        return str(self._session.files.onnx)

    @property
    def identity(self) -> str:
        return self._identity

    @cached_property
    def model_identity(self) -> ModelIdentity:
        """What an index records about this model (``esbridge.embeddings.identity``)."""
        files = self._session.files
        try:
            weights = weights_digest([files.onnx])
        except OSError as exc:
            raise ModelUnavailable(f"cannot read model files in {files.folder}: {exc}", model=self._name) from exc
        return ModelIdentity(
            name=self._name,
            weights=weights,
            dimension=self._dimension,
            pooling=self.profile.pooling,
            normalize=self.profile.normalize,
            query_prompt=self.profile.query_prompt,
            passage_prompt=self.profile.passage_prompt,
            backend="onnx",
            precision=self.precision,
            max_tokens=self._max_tokens,
        )

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def prompts(self) -> ModelProfile:
        return self.profile

    def count_tokens(self, text: str) -> int:
        return self._session.count_tokens(text)

    def close(self) -> None:
        self._session.close()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            return self._embed_raw(texts)
        except Exception as exc:  # onnxruntime raises its own exception types for bad input and out-of-memory
            raise EmbeddingError(f"embedding {len(texts)} text(s) failed: {exc}", model=self._name) from exc

    def _embed_raw(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        encodings = self._session.tokenizer.encode_batch(list(texts))
        order = length_order([len(encoding.ids) for encoding in encodings])
        pooled = [
            pool(states, mask, self.profile.pooling)
            for states, mask in self._session.run([encodings[position] for position in order], self._batch_size)
        ]
        vectors = np.concatenate(pooled, axis=0)
        if self.profile.normalize:
            vectors = normalize_rows(vectors)
        result: list[list[float]] = [[] for _ in texts]
        for row, position in enumerate(order):
            result[position] = vectors[row].tolist()
        return result


def settings_profile(settings: EmbeddingSettings) -> ModelProfile:
    """The model's profile with whatever ``[embedding]`` overrides."""
    return profile_for(
        settings.model,
        pooling=settings.pooling,
        normalize=settings.normalize,
        query_prompt=settings.query_prompt,
        passage_prompt=settings.passage_prompt,
        max_tokens=settings.max_tokens,
    )


def batched_suffix(batch_size: int) -> str:
    """What an int8 embedder's identity ends with at a batch size above one (``esbridge.embeddings.cache.model_of``
    takes it off)."""
    return f"+batch{batch_size}"


def _fingerprint(files: OnnxFiles, profile: ModelProfile) -> str:
    try:
        weights = files_fingerprint([(files.onnx.name, files.onnx), ("tokenizer.json", files.tokenizer)])
    except OSError as exc:
        raise ModelUnavailable(f"cannot read model files in {files.folder}: {exc}", model=files.name) from exc
    return hashlib.sha256(f"{weights};{profile.describe()}".encode()).hexdigest()[:16]
