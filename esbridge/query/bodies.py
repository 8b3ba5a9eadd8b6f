"""Retriever request bodies per engine dialect: pure functions, tested without a server.

Both retrievers take the same filter clauses. For kNN they go inside the ``knn`` clause, where both
engines apply them while searching the HNSW graph (efficient pre-filtering), so a selective filter
still returns ``k`` results instead of filtering an already-cut top-k down to nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from esbridge.engines.base import JSON, Dialect
from esbridge.mappings.schema import VECTOR_FIELD
from esbridge.query.models import Filters, status_spellings

# Fields analysed alike (English): scored together as one field, BM25F-style.
# Title 1.5, not the 3.0 it was: every chunk repeats its document's title, and on SciFact's train
# queries BM25 nDCG@10 was 0.638 at 3.0, 0.675 at 2.0, 0.688 at 1.5, 0.678 at 1.0 (docs/evaluation.md).
DEFAULT_TEXT_BOOSTS: Mapping[str, float] = {
    "title": 1.5,
    "aliases": 2.5,
    "headings": 2.0,
    "body": 1.0,
    "metadata_text": 1.0,
}
# Fields with their own analyzers: scored separately, best field wins.
DEFAULT_EXACT_BOOSTS: Mapping[str, float] = {"path.text": 2.0, "code": 1.0}

# Stored fields a search asks for. The chunk texts (body, code) are the bulk of a response; only
# re-ranking and adaptive fusion read them, so other searches ask for DISPLAY_FIELDS.
RESULT_FIELDS = (
    "doc_id",
    "chunk_id",
    "title",
    "path",
    "links",
    "modified_at",
    "entity_type",
    "status",
    "tags",
    "body",
    "code",
)
TEXT_FIELDS = ("body", "code")
DISPLAY_FIELDS = tuple(field for field in RESULT_FIELDS if field not in TEXT_FIELDS)


MAX_CLAUSES = 1024
"""OpenSearch's default ``indices.query.bool.max_clause_count`` (Elasticsearch's grows with the heap): a BM25
query expands to about one clause per word and field, and a query over the limit is refused with
``too_many_nested_clauses``, so a long query (a pasted abstract) would fail instead of being answered."""

_WORD = re.compile(r"[^\W_]+")


def bounded_text(text: str, fields: int, max_clauses: int = MAX_CLAUSES) -> str:
    """``text`` itself when its words times ``fields`` fit in ``max_clauses``; otherwise its distinct words
    (case-folded, first occurrence first), as many as fit.

    Only a query that the engine would refuse is changed. Repeats go first because they add clauses but
    little evidence; what still does not fit is cut from the end.
    """
    words = _WORD.findall(text)
    if len(words) * max(fields, 1) <= max_clauses:
        return text
    distinct = list(dict.fromkeys(word.casefold() for word in words))
    return " ".join(distinct[: max(max_clauses // max(fields, 1), 1)])


BM25_MAX_WORDS = MAX_CLAUSES // (len(DEFAULT_TEXT_BOOSTS) + len(DEFAULT_EXACT_BOOSTS))
"""The most words of a query that ``bm25_body`` sends with the default fields."""


def bm25_text(
    text: str,
    text_boosts: Mapping[str, float] = DEFAULT_TEXT_BOOSTS,
    exact_boosts: Mapping[str, float] = DEFAULT_EXACT_BOOSTS,
) -> str:
    """What ``bm25_body`` searches for ``text``: the text, unless it is too long (``bounded_text``)."""
    return bounded_text(text, len(text_boosts) + len(exact_boosts))


def filter_clauses(filters: Filters) -> list[JSON]:
    """The filter clauses of ``filters`` (terms, date ranges), without the lifecycle exclusion."""
    clauses: list[JSON] = [
        {"terms": {field: _spellings(values) if field == "status" else list(values)}}
        for field, values in sorted(filters.terms.items())
    ]
    for field, after, before in (
        ("modified_at", filters.modified_after, filters.modified_before),
        ("created_at", filters.created_after, filters.created_before),
    ):
        bounds: JSON = {}
        if after is not None:
            bounds["gte"] = after.isoformat()
        if before is not None:
            bounds["lte"] = before.isoformat()
        if bounds:
            clauses.append({"range": {field: bounds}})
    return clauses


def filter_query(filters: Filters) -> JSON:
    """One ``bool`` query holding every filter, the lifecycle exclusion included."""
    query: JSON = {"filter": filter_clauses(filters)}
    excluded = filters.excluded_statuses
    if excluded:
        query["must_not"] = [{"terms": {"status": _spellings(excluded)}}]
    return {"bool": query}


def _spellings(statuses: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(spelling for status in statuses for spelling in status_spellings(status)))


def _boosted(boosts: Mapping[str, float]) -> list[str]:
    return [field if boost == 1.0 else f"{field}^{boost:g}" for field, boost in boosts.items()]


def bm25_body(
    dialect: Dialect,
    text: str,
    *,
    size: int,
    filters: Filters,
    text_boosts: Mapping[str, float] = DEFAULT_TEXT_BOOSTS,
    exact_boosts: Mapping[str, float] = DEFAULT_EXACT_BOOSTS,
    source_fields: Sequence[str] = RESULT_FIELDS,
) -> JSON:
    """BM25 over the text fields with per-field boosts.

    Elasticsearch scores the English fields with ``combined_fields`` (BM25F); OpenSearch, which has no
    ``combined_fields``, with ``multi_match`` of type ``cross_fields``, which blends term statistics
    across the fields the same way. Path and code, analysed differently, add a ``best_fields`` match. A
    query too long for the engine's clause limit is shortened first (``bm25_text``).
    """
    if not text_boosts:
        raise ValueError("BM25 needs at least one text field to search")
    text = bm25_text(text, text_boosts, exact_boosts)
    if dialect == "elasticsearch":
        grouped: JSON = {"combined_fields": {"query": text, "fields": _boosted(_at_least_one(text_boosts))}}
    else:
        grouped = {"multi_match": {"query": text, "type": "cross_fields", "fields": _boosted(text_boosts)}}
    exact: JSON = {"multi_match": {"query": text, "type": "best_fields", "fields": _boosted(exact_boosts)}}
    query = filter_query(filters)
    # No exact fields: no clause; a multi_match without fields would search every field of the index.
    query["bool"]["should"] = [grouped, exact] if exact_boosts else [grouped]
    query["bool"]["minimum_should_match"] = 1
    return {"size": size, "_source": list(source_fields), "query": query}


def knn_body(
    dialect: Dialect,
    vector: Sequence[float],
    *,
    k: int,
    filters: Filters,
    num_candidates: int,
    source_fields: Sequence[str] = RESULT_FIELDS,
) -> JSON:
    """The ``k`` nearest chunks to ``vector`` among those that pass ``filters``.

    ``num_candidates`` is Elasticsearch's per-shard candidate list; for OpenSearch's Lucene engine it
    is sent as ``method_parameters.ef_search``, the same knob.
    """
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    candidates = max(num_candidates, k)
    filter_clause = filter_query(filters)
    if dialect == "opensearch":
        clause: JSON = {
            "vector": list(vector),
            "k": k,
            "filter": filter_clause,
            "method_parameters": {"ef_search": candidates},
        }
        return {"size": k, "_source": list(source_fields), "query": {"knn": {VECTOR_FIELD: clause}}}
    knn: JSON = {
        "field": VECTOR_FIELD,
        "query_vector": list(vector),
        "k": k,
        "num_candidates": candidates,
        "filter": filter_clause,
    }
    return {"size": k, "_source": list(source_fields), "knn": knn}


def links_body(doc_ids: Sequence[str], *, size: int, filters: Filters) -> JSON:
    """One request for graph expansion: the seed documents (their out-links) and every chunk linking to them."""
    query = filter_query(filters)
    query["bool"]["should"] = [{"terms": {"doc_id": list(doc_ids)}}, {"terms": {"links": list(doc_ids)}}]
    query["bool"]["minimum_should_match"] = 1
    return {"size": size, "_source": [*RESULT_FIELDS, "link_weights"], "query": query}


def _at_least_one(boosts: Mapping[str, float]) -> dict[str, float]:
    # combined_fields accepts only boosts >= 1 (they weight term frequencies, BM25F).
    return {field: max(boost, 1.0) for field, boost in boosts.items()}
