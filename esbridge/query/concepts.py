"""Concept-vocabulary query expansion (off by default, until evaluation shows it helps).

At ingest, the corpus's frequent non-stopword terms are embedded and stored in a small kNN index
beside the main one (``<alias>-concepts``). At query time the terms nearest to the query's vector are
appended to the text that is embedded for the semantic retriever; BM25 keeps the user's words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from esbridge.embeddings.base import Embedder, embed_passages, is_zero
from esbridge.engines.base import AsyncEngine, BulkAction, BulkItemFailure, BulkResult, Engine
from esbridge.engines.dialect import index_settings, knn_body, vector_field
from esbridge.mappings.creation import create_once
from esbridge.query.deadline import with_timeout

TERM_FIELD = "term"
_WORD = r"(?u)\b[^\W\d_][\w-]{2,}\b"  # words of 3+ characters starting with a letter
CONCEPT_VECTOR = "vector"


def concept_index_name(alias: str) -> str:
    return f"{alias}-concepts"


def frequent_terms(texts: Iterable[str], *, limit: int = 2000, min_documents: int = 2) -> list[str]:
    """The ``limit`` terms found in the most texts (English stop words left out), most frequent first."""
    from sklearn.feature_extraction.text import CountVectorizer

    corpus = [text for text in texts if text.strip()]
    if not corpus:
        return []
    vectorizer = CountVectorizer(
        stop_words="english",
        lowercase=True,
        token_pattern=_WORD,
        min_df=min(min_documents, len(corpus)),
        binary=True,
    )
    try:
        counts = vectorizer.fit_transform(corpus).sum(axis=0).A1
    except ValueError:  # every term pruned
        return []
    terms = vectorizer.get_feature_names_out()
    ranked = sorted(zip(terms, counts, strict=True), key=lambda pair: (-pair[1], pair[0]))
    return [str(term) for term, _ in ranked[:limit]]


@dataclass(frozen=True)
class ConceptVocabulary:
    """What ``build_concept_index`` wrote: the terms indexed, those the model saw nothing in (a zero vector, which
    no engine takes for cosine) and those the engine refused."""

    written: int
    unseen: tuple[str, ...] = ()
    refused: tuple[BulkItemFailure, ...] = ()

    def warnings(self, name: str) -> list[str]:
        notes = []
        if self.unseen:
            notes.append(
                f"{name}: {len(self.unseen)} term(s) left out, the model sees nothing in them: {_few(self.unseen)}"
            )
        if self.refused:
            reasons = _few([f"{failure.id} ({failure.reason})" for failure in self.refused])
            notes.append(
                f"{name}: the engine refused {len(self.refused)} term(s), left out of query expansion: {reasons}"
            )
        return notes


def _few(items: Sequence[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def build_concept_index(engine: Engine, alias: str, terms: Sequence[str], embedder: Embedder) -> ConceptVocabulary:
    """(Re)create ``<alias>-concepts`` with one document per term and its vector."""
    name = concept_index_name(alias)
    engine.delete_index(name, missing_ok=True)
    create_once(
        engine,
        name,
        {
            "settings": index_settings(engine.dialect),
            "mappings": {
                "properties": {
                    TERM_FIELD: {"type": "keyword"},
                    CONCEPT_VECTOR: vector_field(engine.dialect, embedder.dimension),
                }
            },
        },
    )
    if not terms:
        return ConceptVocabulary(0)
    vectors = embed_passages(embedder, list(terms))
    seen = [(term, vector) for term, vector in zip(terms, vectors, strict=True) if not is_zero(vector)]
    unseen = tuple(term for term, vector in zip(terms, vectors, strict=True) if is_zero(vector))
    actions = [BulkAction("index", term, {TERM_FIELD: term, CONCEPT_VECTOR: vector}) for term, vector in seen]
    result = engine.bulk(name, actions) if actions else BulkResult((), ())
    engine.refresh(name)
    return ConceptVocabulary(len(result.succeeded), unseen, tuple(result.failed))


@dataclass(frozen=True)
class Expansion:
    text: str
    terms: tuple[str, ...]
    partial: str | None = None
    """``SearchResult.partial`` of the vocabulary's answer: nearer terms may be on shards that did not answer"""


async def expand_query(
    engine: AsyncEngine, alias: str, query: str, vector: Sequence[float], *, terms: int = 3, timeout_s: float
) -> Expansion:
    """The query text with the nearest concept terms appended (those already in the query skipped). The engine
    answers with what it found within ``timeout_s``; the caller's wait is its own to limit."""
    body = with_timeout(
        {**knn_body(engine.dialect, CONCEPT_VECTOR, vector, k=terms + 3), "_source": [TERM_FIELD]}, timeout_s
    )
    result = await engine.search(concept_index_name(alias), body)
    words = set(query.lower().split())
    found = [str(hit.source[TERM_FIELD]) for hit in result.hits if str(hit.source[TERM_FIELD]) not in words][:terms]
    return Expansion(f"{query} {' '.join(found)}".strip(), tuple(found), result.partial)
