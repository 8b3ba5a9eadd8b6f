"""Retrievers: each turns a query (and, if it needs one, the query's vector) into a request body.

They are plugins in the ``esbridge.retrievers`` entry-point group; esbridge declares its ``bm25`` and
``knn`` there. ``pipeline.retrievers`` names the ones a search runs; lexical ones are sent at once,
semantic ones as soon as the query vector exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.engines.base import JSON, Dialect
from esbridge.plugins import RETRIEVER_GROUP, Registry
from esbridge.query import bodies
from esbridge.query.models import Filters


@dataclass(frozen=True)
class RetrievalContext:
    dialect: Dialect
    query: str
    top_k: int
    filters: Filters
    num_candidates: int
    source_fields: Sequence[str] = bodies.RESULT_FIELDS
    """stored fields each hit brings back"""
    fields: FieldMap = DEFAULT_FIELD_MAP
    """the index's fields by role: esbridge's own schema, or an attached index's field map"""


class Retriever(Protocol):
    needs_vector: bool
    """True for semantic retrievers, which get the query's vector; they count as the search's semantic half."""

    def body(self, context: RetrievalContext, vector: Sequence[float] | None) -> JSON: ...


class BM25Retriever:
    needs_vector = False

    def body(self, context: RetrievalContext, vector: Sequence[float] | None) -> JSON:
        return bodies.bm25_body(
            context.dialect,
            context.query,
            size=context.top_k,
            filters=context.filters,
            fields=context.fields,
            source_fields=context.source_fields,
        )


class KnnRetriever:
    needs_vector = True

    def body(self, context: RetrievalContext, vector: Sequence[float] | None) -> JSON:
        if context.fields.query_embedding == "engine":  # the engine embeds the query text itself
            return bodies.engine_embedded_body(
                context.dialect,
                context.query,
                k=context.top_k,
                filters=context.filters,
                num_candidates=max(context.num_candidates, 2 * context.top_k),
                fields=context.fields,
                source_fields=context.source_fields,
            )
        if vector is None:
            raise ValueError("the kNN retriever needs the query vector")
        return bodies.knn_body(
            context.dialect,
            vector,
            k=context.top_k,
            filters=context.filters,
            num_candidates=max(context.num_candidates, 2 * context.top_k),
            fields=context.fields,
            source_fields=context.source_fields,
        )


bm25 = BM25Retriever()
knn = KnnRetriever()

RETRIEVERS: Registry[Retriever] = Registry("retriever", RETRIEVER_GROUP)
