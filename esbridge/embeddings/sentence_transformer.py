"""Embedding with a sentence-transformers model, loaded from a local folder or the Hugging Face hub.

sentence-transformers (and torch behind it) is imported only when a model is loaded: importing it
takes seconds, and lexical-only use of esbridge needs none of it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import check_max_tokens
from esbridge.embeddings.identity import ModelIdentity
from esbridge.embeddings.profiles import ModelProfile, profile_for
from esbridge.embeddings.resolve import (
    BUNDLED_MODEL,
    ModelSource,
    folder_fingerprint,
    hub_snapshot_dir,
    resolve_model,
    with_offline_hint,
)
from esbridge.embeddings.weights import torch_weight_files, weights_digest
from esbridge.errors import ConfigError, DependencyMissing, EmbeddingError, ModelUnavailable

BATCH_SIZE = 32
"""Texts sentence-transformers embeds at a time unless ``[embedding] batch_size`` says otherwise."""


class SentenceTransformerEmbedder:
    """An ``Embedder`` backed by a sentence-transformers model; loading happens in the constructor.

    Raises ``ModelUnavailable`` when the model cannot be found or loaded, ``DependencyMissing`` when
    sentence-transformers is not installed, and ``ConfigError`` when ``dimension`` is given and differs
    from what the model produces.
    """

    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        *,
        dimension: int | None = None,
        batch_size: int = BATCH_SIZE,
        device: str = "cpu",
        threads: int | None = None,
        profile: ModelProfile | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._source = resolve_model(model)
        if self._source.local:
            _refuse_a_classifier(Path(self._source.location), self._source.name)
        self._batch_size = batch_size
        self._model = _load(self._source, device)
        refuse_a_tokenizer_without_words(getattr(self._model, "tokenizer", None), self._source.name)
        if threads is not None and self._model.device.type == "cpu":
            _set_torch_threads(threads)
        self._dimension = _model_dimension(self._model, self._source.name)
        if dimension is not None and dimension != self._dimension:
            raise ConfigError(
                f"embedding.dimension is {dimension}, but model {self._source.name!r} produces "
                f"{self._dimension}-dimensional vectors; remove the setting or pick a matching model"
            )
        self.profile = profile or profile_for(self._source.name)
        folder_tokens = getattr(self._model, "max_seq_length", None)
        if self.profile.max_tokens is not None:
            self._model.max_seq_length = self.profile.max_tokens
        self._max_tokens = _max_tokens(self._model, self._source.name)
        self._count = _token_counter(self._model, self._source.name)
        overrides = _overrides(self._model, self.profile, folder_tokens, self._max_tokens)
        self._identity = f"{self._source.name}@{_fingerprint(self._source)}{overrides}/{self._dimension}"

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> SentenceTransformerEmbedder:
        embedder = cls(
            settings.model,
            dimension=settings.dimension,
            batch_size=BATCH_SIZE if settings.batch_size is None else settings.batch_size,
            device=settings.device,
            threads=settings.threads,
            profile=_settings_profile(settings),
        )
        _refuse_what_the_folder_overrides(embedder._model, embedder.name, settings)
        check_max_tokens(embedder, settings.max_tokens)
        return embedder

    @property
    def name(self) -> str:
        return self._source.name

    @property
    def location(self) -> str:
        """The folder the model was loaded from, or its hub id."""
        return self._source.location

    @property
    def identity(self) -> str:
        return self._identity

    @cached_property
    def model_identity(self) -> ModelIdentity:
        """What an index records about this model (``esbridge.embeddings.identity``); the weights are hashed on
        first use and remembered by path, size and mtime."""
        folder = Path(self._source.location) if self._source.local else hub_snapshot_dir(self._source.location)
        try:
            files = torch_weight_files(folder) if folder is not None else []
            weights = weights_digest(files, folder) if files else None
        except OSError as exc:
            raise ModelUnavailable(f"cannot read model files in {folder}: {exc}", model=self.name) from exc
        return ModelIdentity(
            name=self._source.name,
            weights=weights,
            revision=folder.name if folder is not None and not self._source.local else None,
            dimension=self._dimension,
            pooling=_pooling(self._model, self.profile.pooling),
            normalize=self.profile.normalize or _normalizes(self._model),
            query_prompt=self.profile.query_prompt,
            passage_prompt=self.profile.passage_prompt,
            backend="torch",
            precision="fp32",
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
        """Query and passage prompts; pooling is the sentence-transformers folder's own."""
        return self.profile

    def count_tokens(self, text: str) -> int:
        """Tokens including the special ones the model adds ([CLS], [SEP]), as in ``max_tokens``.

        So ``count_tokens(text) <= max_tokens`` means nothing of ``text`` is cut off.
        """
        return self._count(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=self.profile.normalize,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        except (RuntimeError, ValueError, TypeError, MemoryError) as exc:  # torch reports most failures as RuntimeError
            raise EmbeddingError(f"embedding {len(texts)} text(s) failed: {exc}", model=self.name) from exc
        result: list[list[float]] = vectors.tolist()
        return result


def _settings_profile(settings: EmbeddingSettings) -> ModelProfile:
    from esbridge.embeddings.onnx_runtime import settings_profile

    return settings_profile(settings)


def _set_torch_threads(count: int) -> None:
    """torch's intra-op CPU threads, for the whole process (torch has no per-model setting).

    Query-serving processes use one (``embedding.query_threads``): a short query embeds fastest on one
    thread, concurrent queries then run side by side, and a core stays free for an engine on the same
    machine (docs/benchmarks.md, end-to-end latency per mode). Ingest keeps torch's default, one thread per core.
    """
    import torch

    torch.set_num_threads(count)


def _load(source: ModelSource, device: str) -> Any:
    # A local folder is loaded with local_files_only, which asks the hub nothing. HF_HUB_OFFLINE is not set for
    # it: the hub reads that once per process, so no hub model (a re-ranker) could be downloaded afterwards.
    try:
        from sentence_transformers import SentenceTransformer
    except ModuleNotFoundError as exc:
        raise DependencyMissing("sentence-transformers", purpose="embedding texts") from exc
    except ImportError as exc:  # installed but broken, e.g. a torch build that does not fit this machine
        raise ModelUnavailable(f"sentence-transformers cannot be imported: {exc}", model=source.name) from exc
    try:
        with no_weight_loading_progress_bar():
            return SentenceTransformer(source.location, device=device, local_files_only=source.local)
    except Exception as exc:  # whatever the cause, there is no model: callers fall back to lexical search
        where = f"folder {source.location}" if source.local else "the Hugging Face hub"
        reason = f"cannot be loaded from {where}: {type(exc).__name__}: {exc}"
        raise ModelUnavailable(reason if source.local else with_offline_hint(reason), model=source.name) from exc


@contextmanager
def no_weight_loading_progress_bar(*, warnings: bool = True) -> Iterator[None]:
    """transformers draws a "Loading weights" bar on stderr, which would interleave with esbridge's output.
    ``warnings=False`` also silences its warnings meanwhile (e.g. the report of a head it made up, which the
    caller reports in its own words)."""
    try:
        transformers_logging: Any = importlib.import_module("transformers.utils.logging")  # untyped
    except ImportError:
        yield
        return
    was_enabled = transformers_logging.is_progress_bar_enabled()
    level = transformers_logging.get_verbosity()
    transformers_logging.disable_progress_bar()
    if not warnings:
        transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()
        transformers_logging.set_verbosity(level)


def _refuse_a_classifier(folder: Path, name: str) -> None:
    """A folder that is no sentence-transformers model (no ``modules.json``) and whose ``config.json`` names only
    sequence classifiers is a cross-encoder: sentence-transformers would drop its head and mean-pool token
    states it was never trained to make vectors of."""
    if (folder / "modules.json").is_file():
        return
    try:
        architectures = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        return  # the loader reports a folder it cannot read
    if (
        isinstance(architectures, list)
        and architectures
        and all(str(kind).endswith("ForSequenceClassification") for kind in architectures)
    ):
        raise ModelUnavailable(
            f"{folder} holds a {', '.join(map(str, architectures))} and no sentence-transformers modules: a "
            "cross-encoder (or another classifier) scores texts and makes no vectors; name it in [pipeline.rerank] "
            "model, and an embedding model here",
            model=name,
        )


def refuse_a_tokenizer_without_words(tokenizer: Any, name: str, role: str = "embedding model") -> None:
    """A folder without its tokenizer files loads on transformers with a tokenizer of special tokens only, which
    reads every word as its unknown token: every text would get nearly the same vector, or score."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    if unknown is None or not callable(tokenizer):
        return  # byte-level tokenizers know no unknown words
    try:
        ids = tokenizer("a b c 1 2 3", add_special_tokens=False)["input_ids"]
    except Exception:  # a tokenizer that cannot read this fails on texts too, where embedding reports it
        return
    if ids and all(token == unknown for token in ids):
        raise ModelUnavailable(
            f"its tokenizer knows no words (it reads each as {tokenizer.unk_token}): the folder lacks its tokenizer "
            "files (tokenizer.json, or vocab.txt with tokenizer_config.json); copy them from where the model came from",
            model=name,
            role=role,
        )


def _model_dimension(model: Any, name: str) -> int:
    # sentence-transformers 5 renamed get_sentence_embedding_dimension and warns on the old name.
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimension = getter()
    if dimension is None:  # some models only know it after a forward pass
        dimension = len(model.encode(["dimension probe"], show_progress_bar=False)[0])
    if not isinstance(dimension, int) or dimension < 1:
        raise ModelUnavailable(f"reports no usable embedding dimension ({dimension!r})", model=name)
    return dimension


def _max_tokens(model: Any, name: str) -> int:
    limit = getattr(model, "max_seq_length", None)
    if not isinstance(limit, int) or limit < 1:
        raise ModelUnavailable(f"reports no usable maximum sequence length ({limit!r})", model=name)
    return limit


def _token_counter(model: Any, name: str) -> Callable[[str], int]:
    tokenizer: Any = getattr(model, "tokenizer", None)
    lower = bool(getattr(model[0], "do_lower_case", False)) if len(model) else False

    def prepare(text: str) -> str:
        return text.lower() if lower else text

    if callable(tokenizer):  # a transformers tokenizer
        # verbose=False: counting a text longer than the model reads is the point, not worth a warning.
        return lambda text: len(tokenizer(prepare(text), add_special_tokens=True, verbose=False)["input_ids"])
    if hasattr(tokenizer, "encode"):  # a bare `tokenizers.Tokenizer`, as static-embedding models have
        return lambda text: len(tokenizer.encode(prepare(text)).ids)
    raise ModelUnavailable("has no tokenizer to count tokens with", model=name)


def _pooling(model: Any, fallback: str) -> str:
    """The pooling of the folder's Pooling module (``cls``, ``mean``, ...); ``fallback`` when it has none."""
    for module in model:
        mode = getattr(module, "pooling_mode", None)  # sentence-transformers 6: a mode, or a tuple of them
        if isinstance(mode, str):
            return mode
        if isinstance(mode, (list, tuple)) and mode:
            return "+".join(str(item) for item in mode)
        describe = getattr(module, "get_pooling_mode_str", None)  # before 6
        if callable(describe):
            return str(describe())
    return fallback


def _refuse_what_the_folder_overrides(model: Any, name: str, settings: EmbeddingSettings) -> None:
    """A pooling or ``normalize = false`` set in ``[embedding]`` that the folder's own modules would silently
    override (sentence-transformers pools and normalizes as the folder says)."""
    pooling = _pooling(model, "")
    if settings.pooling is not None and pooling and settings.pooling != pooling:
        raise ConfigError(
            f"embedding.pooling is {settings.pooling!r}, but on torch {name!r} pools with its folder's own Pooling "
            f'module, which pools by {pooling!r}; remove the setting, or use backend = "onnx", where it applies'
        )
    if settings.normalize is False and _normalizes(model):
        raise ConfigError(
            f"embedding.normalize is false, but {name!r} ends in a Normalize module, which makes every vector unit "
            'length on torch; remove the setting, or use backend = "onnx", where it applies'
        )


def _normalizes(model: Any) -> bool:
    """Whether the folder ends in a Normalize module, which normalizes whatever ``encode`` is told."""
    return any(type(module).__name__ == "Normalize" for module in model)


def _overrides(model: Any, profile: ModelProfile, folder_tokens: object, max_tokens: int) -> str:
    """What the settings change in the vectors the folder makes by itself, for the cache identity: vectors left
    unnormalized, another token limit. Empty for the defaults, so the identities of existing caches stay."""
    unnormalized = "+unnormalized" if not profile.normalize and not _normalizes(model) else ""
    return unnormalized + (f"+max{max_tokens}" if max_tokens != folder_tokens else "")


def _fingerprint(source: ModelSource) -> str:
    folder = Path(source.location) if source.local else hub_snapshot_dir(source.location)
    try:
        return folder_fingerprint(folder) if folder is not None else "unpinned"
    except OSError as exc:
        raise ModelUnavailable(f"cannot read model files in {folder}: {exc}", model=source.name) from exc
