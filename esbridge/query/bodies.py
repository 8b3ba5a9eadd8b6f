"""Retriever request bodies per engine dialect: pure functions, tested without a server.

Both retrievers take the same filter clauses. For kNN they go inside the ``knn`` clause, where both
engines apply them while searching the HNSW graph (efficient pre-filtering), so a selective filter
still returns ``k`` results instead of filtering an already-cut top-k down to nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from esbridge import errors
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.engines.base import JSON, Dialect
from esbridge.query.models import Filters, status_spellings
from esbridge.query.vector_spaces import query_vector

if TYPE_CHECKING:  # networkx, which link_graph imports, is not needed to build bodies
    from esbridge.query.link_graph import Direction

# Fields analysed alike (English): scored together as one field, BM25F-style (the default field map's).
DEFAULT_TEXT_BOOSTS: Mapping[str, float] = DEFAULT_FIELD_MAP.text
# Fields with their own analyzers: scored separately, best field wins.
DEFAULT_EXACT_BOOSTS: Mapping[str, float] = DEFAULT_FIELD_MAP.exact

ELASTICSEARCH_MAX_CANDIDATES = 10_000
"""Elasticsearch refuses a kNN search with more (``[num_candidates] cannot exceed [10000]``); the retrievers ask
for twice their depth, which ``knn_k_per_type`` or ``top_k`` above 5,000 would take past it."""

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

_IDEOGRAPHS = "\u3005-\u3007\u3041-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
# The standard tokenizer makes each Han and Hiragana character a word of its own (UAX #29), and so a clause; a
# Katakana run is a word apart from the letters and digits it touches ("Pythonプログラム": two).
_WORD = re.compile(rf"[{_IDEOGRAPHS}]|[{_KATAKANA}]+|[^\W_{_IDEOGRAPHS}{_KATAKANA}]+")


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


def mapped(fields: FieldMap, name: str) -> str:
    """The index's field for esbridge's filter ``name``; an error naming the setting when it is not mapped."""
    field = fields.field_for(name)
    if field is None:
        raise errors.ConfigError(
            f"cannot filter on {name}: the index's field map names no field for it (set it in [fields.<index>])"
        )
    return field


def filter_clauses(filters: Filters, fields: FieldMap = DEFAULT_FIELD_MAP) -> list[JSON]:
    """The filter clauses of ``filters`` (terms, date ranges) on the mapped fields, without the lifecycle
    exclusion. A filter on a field the map does not name is an error, not a filter silently dropped."""
    clauses: list[JSON] = [
        {"terms": {mapped(fields, name): _spellings(values) if name == "status" else list(values)}}
        for name, values in sorted(filters.terms.items())
    ]
    for name, after, before in (
        ("modified_at", filters.modified_after, filters.modified_before),
        ("created_at", filters.created_after, filters.created_before),
    ):
        bounds: JSON = {}
        if after is not None:
            bounds["gte"] = after.isoformat()
        if before is not None:
            bounds["lte"] = before.isoformat()
        if bounds and fields is not DEFAULT_FIELD_MAP:
            # An attached index's date field may have its own format (dd/MM/yyyy); the bounds are ISO 8601.
            bounds["format"] = "strict_date_optional_time"
        if bounds:
            clauses.append({"range": {mapped(fields, name): bounds}})
    return clauses


def filter_query(filters: Filters, fields: FieldMap = DEFAULT_FIELD_MAP) -> JSON:
    """One ``bool`` query holding every filter, the lifecycle exclusion included (when a status is mapped)."""
    query: JSON = {"filter": filter_clauses(filters, fields)}
    excluded = filters.excluded_statuses
    if excluded and fields.status is not None:
        query["must_not"] = [{"terms": {fields.status: _spellings(excluded)}}]
    return {"bool": query}


def _spellings(statuses: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(spelling for status in statuses for spelling in status_spellings(status)))


def boosted(boosts: Mapping[str, float]) -> list[str]:
    return [field if boost == 1.0 else f"{field}^{boost:g}" for field, boost in boosts.items()]


def bm25_body(
    dialect: Dialect,
    text: str,
    *,
    size: int,
    filters: Filters,
    fields: FieldMap = DEFAULT_FIELD_MAP,
    source_fields: Sequence[str] = RESULT_FIELDS,
) -> JSON:
    """BM25 over the mapped text fields with their boosts (``fields.text`` and ``fields.exact``).

    Elasticsearch scores the English fields with ``combined_fields`` (BM25F); OpenSearch, which has no
    ``combined_fields``, with ``multi_match`` of type ``cross_fields``, which blends term statistics
    across the fields the same way. Path and code, analysed differently, add a ``best_fields`` match. A
    query too long for the engine's clause limit is shortened first (``bm25_text``).
    """
    text_boosts, exact_boosts = fields.text, fields.exact
    text = bm25_text(text, text_boosts, exact_boosts)
    if dialect == "elasticsearch":
        grouped: JSON = {"combined_fields": {"query": text, "fields": boosted(_at_least_one(text_boosts))}}
    else:
        grouped = {"multi_match": {"query": text, "type": "cross_fields", "fields": boosted(text_boosts)}}
    exact: JSON = {"multi_match": {"query": text, "type": "best_fields", "fields": boosted(exact_boosts)}}
    query = filter_query(filters, fields)
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
    fields: FieldMap = DEFAULT_FIELD_MAP,
    source_fields: Sequence[str] = RESULT_FIELDS,
    excluded_types: Sequence[str] = (),
) -> JSON:
    """The ``k`` nearest chunks to ``vector`` in the mapped vector field among those that pass ``filters``
    (and whose entity type is none of ``excluded_types``).

    ``num_candidates`` is Elasticsearch's per-shard candidate list; for OpenSearch's Lucene engine it
    is sent as ``method_parameters.ef_search``, the same knob. On an Elasticsearch ``dot_product`` field the
    vector is sent at unit length, which that space requires (``esbridge.query.vector_spaces``).
    """
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    if fields.vector is None:
        raise errors.ConfigError("kNN needs a vector field, and the index's field map names none")
    candidates = max(num_candidates, k)
    filter_clause = filter_query(filters, fields)
    if excluded_types:
        excluded: JSON = {"terms": {mapped(fields, "entity_type"): list(excluded_types)}}
        filter_clause["bool"]["must_not"] = [*filter_clause["bool"].get("must_not", []), excluded]
    if dialect == "opensearch":
        clause: JSON = {
            "vector": list(vector),
            "k": k,
            "filter": filter_clause,
            "method_parameters": {"ef_search": candidates},
        }
        return {"size": k, "_source": list(source_fields), "query": {"knn": {fields.vector: clause}}}
    knn: JSON = {
        "field": fields.vector,
        "query_vector": query_vector(fields.space, vector),
        "k": k,
        "num_candidates": max(k, min(candidates, ELASTICSEARCH_MAX_CANDIDATES)),
        "filter": filter_clause,
    }
    return {"size": k, "_source": list(source_fields), "knn": knn}


def engine_embedded_body(
    dialect: Dialect,
    text: str,
    *,
    k: int,
    filters: Filters,
    num_candidates: int,
    fields: FieldMap,
    source_fields: Sequence[str] = RESULT_FIELDS,
) -> JSON:
    """The ``k`` nearest documents to ``text`` embedded by the engine itself, with the model that made the
    index's vectors (``fields.query_embedding = "engine"``).

    OpenSearch: a ``neural`` query with the ML model id, filters inside it (neural-search 2.12+) as in
    ``knn_body``. Elasticsearch: a ``semantic`` query on a ``semantic_text`` field (its mapping names the
    inference endpoint; the query has no filter of its own, so the filters wrap it in a ``bool``), or kNN on
    a dense_vector field with a ``query_vector_builder`` naming the inference endpoint or model, filters inside.
    """
    if fields.vector is None:
        raise errors.ConfigError(
            "engine-side embedding needs the vector field it searches, and the field map names none"
        )
    filter_clause = filter_query(filters, fields)
    if dialect == "opensearch":
        clause: JSON = {"query_text": text, "model_id": fields.model_id, "k": k, "filter": filter_clause}
        return {"size": k, "_source": list(source_fields), "query": {"neural": {fields.vector: clause}}}
    if fields.semantic_text:
        query: JSON = {
            "bool": {"must": [{"semantic": {"field": fields.vector, "query": text}}], **filter_clause["bool"]}
        }
        return {"size": k, "_source": list(source_fields), "query": query}
    knn: JSON = {
        "field": fields.vector,
        "k": k,
        "num_candidates": max(k, min(num_candidates, ELASTICSEARCH_MAX_CANDIDATES)),
        "filter": filter_clause,
        "query_vector_builder": {"text_embedding": {"model_id": fields.model_id, "model_text": text}},
    }
    return {"size": k, "_source": list(source_fields), "knn": knn}


def links_body(
    doc_ids: Sequence[str],
    *,
    size: int,
    filters: Filters,
    fields: FieldMap = DEFAULT_FIELD_MAP,
    direction: Direction = "both",
) -> JSON:
    """The link data of ``doc_ids`` for graph expansion: their own chunks (``out``: the links they make), the
    chunks linking to them (``in``), or both in one request.

    On esbridge's schema only first chunks are read (every chunk of a document carries its links), so one
    hit is one document; hits come in document id order, so an answer cut at ``size`` keeps the same
    documents on every engine. Without a mapped id field, documents are found by the engine's ``_id``."""
    if fields.links is None:
        raise errors.ConfigError("graph expansion needs a links field, and the index's field map names none")
    own: JSON = {"terms": {fields.id: list(doc_ids)}} if fields.id else {"ids": {"values": list(doc_ids)}}
    linking: JSON = {"terms": {fields.links: list(doc_ids)}}
    query = filter_query(filters, fields)
    if direction == "both":
        query["bool"]["should"] = [own, linking]
        query["bool"]["minimum_should_match"] = 1
    else:
        query["bool"]["filter"].append(own if direction == "out" else linking)
    stored = RESULT_FIELDS if fields is DEFAULT_FIELD_MAP else fields.stored_fields(with_texts=False)
    body: JSON = {"size": size, "_source": [*stored, "link_weights"], "query": query}
    if fields is DEFAULT_FIELD_MAP:
        query["bool"]["filter"].append({"term": {"chunk_index": 0}})
    if fields.id:  # sorting on _id is refused by Elasticsearch
        body["sort"] = [{fields.id: "asc"}]
    return body


def _at_least_one(boosts: Mapping[str, float]) -> dict[str, float]:
    # combined_fields accepts only boosts >= 1 (they weight term frequencies, BM25F).
    return {field: max(boost, 1.0) for field, boost in boosts.items()}
