"""What the rest of esbridge needs from an embedding model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Protocol, runtime_checkable

from esbridge.daemon_threads import DaemonThreads
from esbridge.embeddings.profiles import PLAIN, ModelProfile
from esbridge.errors import ConfigError, EmbeddingError
from esbridge.text import is_blank


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


def check_max_tokens(model: Embedder, max_tokens: int | None) -> None:
    """Refuse an ``[embedding] max_tokens`` the model cannot read: embeds one text of that many tokens.

    The tokenizer cuts texts at whatever it is told, but a model has only so many positions (BERT: 512);
    above them every longer text, a long query or chunk, would fail to embed while shorter ones work.
    """
    if max_tokens is None:
        return
    try:
        model.embed(["word " * max_tokens])  # cut at max_tokens, one token a word or more
    except Exception as exc:  # the backends' own error types, and what they translate into EmbeddingError
        raise ConfigError(
            f"embedding.max_tokens is {max_tokens}, but {model.name!r} cannot read {max_tokens} tokens at once (a "
            "text that long fails to embed): lower it to at most the model's positions (512 for BERT-like models), "
            "or remove it to use the model's own limit"
        ) from exc


def model_profile(model: Embedder) -> ModelProfile:
    """The prompts (and pooling) ``model`` was trained with; an embedder that says nothing has none."""
    profile = getattr(model, "prompts", None)
    return profile if isinstance(profile, ModelProfile) else PLAIN


def passages_cut(model: Embedder, texts: Sequence[str]) -> int:
    """How many of ``texts``, with the model's passage prompt, hold more tokens than it reads: their ends are cut off
    before embedding, so their vectors stand for their beginnings only."""
    profile = model_profile(model)
    limit = model.max_tokens
    return sum(1 for text in texts if model.count_tokens(profile.passage(text)) > limit)


def embed_passages(model: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of texts to be indexed, each behind the model's passage prompt (e5's ``"passage: "``)."""
    profile = model_profile(model)
    return model.embed([profile.passage(text) for text in texts])


def passage_vectors(model: Embedder, texts: Sequence[str]) -> list[list[float] | None]:
    """``embed_passages`` of the texts that show something, None for the others: a blank text (a model's vector of
    nothing sits near every query, so a chunk without text would be the first kNN hit for queries it has nothing to
    do with), and one the model sees nothing in, whose vector is zero (no engine indexes a zero vector for cosine,
    each refusing the whole chunk)."""
    shown = [position for position, text in enumerate(texts) if not is_blank(text)]
    vectors: list[list[float] | None] = [None] * len(texts)
    for position, vector in zip(shown, embed_passages(model, [texts[p] for p in shown]) if shown else [], strict=True):
        vectors[position] = None if is_zero(vector) else vector
    return vectors


def seen_as_nothing(texts: Sequence[str], vectors: Sequence[Sequence[float] | None]) -> int:
    """How many of ``texts`` show something, yet got no vector from ``passage_vectors`` (the model saw nothing)."""
    return sum(1 for text, vector in zip(texts, vectors, strict=True) if vector is None and not is_blank(text))


def nothing_seen_warning(model: Embedder, count: int) -> str:
    return (
        f"{count} chunk(s) hold text in which {model.name} sees nothing (its vector of them is zero, which no engine "
        "searches by cosine): indexed without a vector, for BM25 and filters only"
    )


def is_zero(vector: Sequence[float]) -> bool:
    return not any(vector)


def embed_queries(model: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of queries, each behind the model's query prompt (bge's instruction, e5's ``"query: "``). A query
    the model sees nothing in (a zero vector, which every engine refuses for cosine) is an ``EmbeddingError``: a
    search then answers with BM25 alone, saying why."""
    profile = model_profile(model)
    vectors = model.embed([profile.query(text) for text in texts])
    for text, vector in zip(texts, vectors, strict=True):
        if is_zero(vector):
            raise EmbeddingError(
                f"its vector of the query {text!r} is zero: it sees nothing in it to search by meaning",
                model=model.name,
            )
    return vectors


def start_embedding(model: Embedder, texts: Sequence[str]) -> asyncio.Future[list[list[float]]]:
    """Query vectors (``embed_queries``) as a future of the running loop, handed at once to a thread of their own
    (``asyncio.to_thread`` would wait for a loop turn). A search and ``esbridge bench`` both embed through this, so
    the bench times the embedding the way a search pays for it.

    The threads are daemons (``esbridge.daemon_threads``): a model call that never returns holds no thread the
    engine's reads need, and nothing waits for it at the end. ``embeddings_running`` counts calls not returned."""
    return QUERY_THREADS.start(partial(embed_queries, model, list(texts)))


def embeddings_running() -> int:
    """Query embeddings (``start_embedding``) whose model call has not returned yet."""
    return QUERY_THREADS.running


QUERY_THREADS = DaemonThreads("esbridge-query-embedding")
