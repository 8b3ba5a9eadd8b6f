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
    knn_types: Sequence[str] = ()
    """entity types that each get their own kNN request (``pipeline.knn_per_type``)"""
    k_per_type: int = 30


class Retriever(Protocol):
    needs_vector: bool
    """True for semantic retrievers, which get the query's vector; they count as the search's semantic half."""

    def body(self, context: RetrievalContext, vector: Sequence[float] | None) -> JSON: ...


def request_bodies(retriever: Retriever, context: RetrievalContext, vector: Sequence[float] | None) -> list[JSON]:
    """The requests a retriever sends: one, or several whose hits make one run (``KnnRetriever.bodies``)."""
    split = getattr(retriever, "bodies", None)
    return list(split(context, vector)) if callable(split) else [retriever.body(context, vector)]


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
    """One kNN request; or, with ``context.knn_types``, one per entity type (``k_per_type`` each), whose hits
    are merged into one run, so a type with few records is not crowded out before fusion. The types not
    listed (and records without a type) share one more request of the usual ``top_k``."""

    needs_vector = True

    def bodies(self, context: RetrievalContext, vector: Sequence[float] | None) -> list[JSON]:
        asked = context.filters.terms.get("entity_type")
        types = [kind for kind in context.knn_types if asked is None or kind in asked]
        if not types or context.fields.query_embedding == "engine":
            return [self.body(context, vector)]
        if vector is None:
            raise ValueError("the kNN retriever needs the query vector")
        split = [
            self._typed(context, vector, [kind], k=context.k_per_type, num_candidates=2 * context.k_per_type)
            for kind in types
        ]
        if asked is None:
            rest = bodies.knn_body(
                context.dialect,
                vector,
                k=context.top_k,
                filters=context.filters,
                num_candidates=max(context.num_candidates, 2 * context.top_k),
                fields=context.fields,
                source_fields=context.source_fields,
                excluded_types=types,
            )
            return [*split, rest]
        others = [kind for kind in asked if kind not in types]
        if others:
            split.append(self._typed(context, vector, others, k=context.top_k, num_candidates=2 * context.top_k))
        return split

    @staticmethod
    def _typed(
        context: RetrievalContext, vector: Sequence[float], kinds: list[str], *, k: int, num_candidates: int
    ) -> JSON:
        return bodies.knn_body(
            context.dialect,
            vector,
            k=k,
            filters=context.filters.model_copy(update={"terms": {**context.filters.terms, "entity_type": kinds}}),
            num_candidates=max(context.num_candidates, num_candidates),
            fields=context.fields,
            source_fields=context.source_fields,
        )

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
