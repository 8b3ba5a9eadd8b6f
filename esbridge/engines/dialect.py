"""Pure functions that write request bodies in each engine's dialect.

Nothing here does I/O, so every body can be unit-tested without a server. User text only ever
becomes a JSON string value (``match``/``multi_match``), never part of a query-string syntax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.engines.base import JSON, Dialect


def vector_field(dialect: Dialect, dimension: int, *, m: int = 16, ef_construction: int = 100) -> JSON:
    """The mapping of an HNSW, cosine-similarity vector field.

    OpenSearch names the ``lucene`` engine explicitly: k-NN's default engine (faiss) needs native
    libraries that plugin installs from Maven Central lack.
    """
    if dimension < 1:
        raise ValueError(f"vector dimension must be positive, got {dimension}")
    if dialect == "opensearch":
        return {
            "type": "knn_vector",
            "dimension": dimension,
            "method": {
                "name": "hnsw",
                "engine": "lucene",
                "space_type": "cosinesimil",
                "parameters": {"m": m, "ef_construction": ef_construction},
            },
        }
    return {
        "type": "dense_vector",
        "dims": dimension,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": m, "ef_construction": ef_construction},
    }


def vector_dimension(definition: Mapping[str, Any]) -> int | None:
    """The dimension a vector field's mapping gives (OpenSearch's ``dimension``, Elasticsearch's ``dims``);
    None when it gives none."""
    dimension = definition.get("dimension", definition.get("dims"))
    return dimension if isinstance(dimension, int) and not isinstance(dimension, bool) else None


def index_settings(dialect: Dialect, *, shards: int = 1, replicas: int = 0) -> JSON:
    settings: JSON = {"number_of_shards": shards, "number_of_replicas": replicas}
    if dialect == "opensearch":
        settings["knn"] = True
    return {"index": settings}


def match_body(
    text: str,
    fields: Sequence[str],
    *,
    size: int,
    filters: Sequence[Mapping[str, Any]] = (),
) -> JSON:
    """A BM25 ``multi_match`` over ``fields`` (``"title^2"`` boosts allowed), the same in both dialects."""
    query: JSON = {"multi_match": {"query": text, "fields": list(fields)}}
    return {"size": size, "query": {"bool": {"must": [query], "filter": list(filters)}}}


def knn_body(
    dialect: Dialect,
    field: str,
    vector: Sequence[float],
    *,
    k: int,
    num_candidates: int | None = None,
    filters: Sequence[Mapping[str, Any]] = (),
) -> JSON:
    """A kNN search for the ``k`` nearest neighbours of ``vector``, filters applied during the search."""
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    filter_clause: JSON | None = {"bool": {"filter": list(filters)}} if filters else None
    if dialect == "opensearch":
        knn: JSON = {"vector": list(vector), "k": k}
        if filter_clause is not None:
            knn["filter"] = filter_clause
        return {"size": k, "query": {"knn": {field: knn}}}
    es_knn: JSON = {
        "field": field,
        "query_vector": list(vector),
        "k": k,
        "num_candidates": max(num_candidates or 0, k),
    }
    if filter_clause is not None:
        es_knn["filter"] = filter_clause
    return {"size": k, "knn": es_knn}
