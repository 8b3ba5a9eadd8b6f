"""An index's parameters (vector dimension, HNSW graph, BM25, shards, vector encoding): as the settings want them,
and as a live index was built with them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from esbridge.config.settings import Settings
from esbridge.engines.base import Engine
from esbridge.engines.vector_options import encoding_of
from esbridge.mappings.schema import VECTOR_FIELD, IndexParameters, mapped_vector_dimension


def parameters_from(settings: Settings, dimension: int | None = None) -> IndexParameters:
    """Index parameters from settings; the vector dimension from the model when it is known."""
    mapping = settings.mapping
    return IndexParameters(
        dimension=dimension or settings.embedding.dimension or IndexParameters().dimension,
        hnsw_m=mapping.hnsw_m,
        hnsw_ef_construction=mapping.hnsw_ef_construction,
        bm25_k1=mapping.bm25_k1,
        bm25_b=mapping.bm25_b,
        shards=mapping.shards,
        replicas=mapping.replicas,
        vector_encoding=mapping.vector_encoding,
    )


def live_parameters(engine: Engine, index: str, fallback: IndexParameters) -> IndexParameters:
    """The parameters ``index`` was built with, read from its mapping and settings; ``fallback``'s for
    anything the engine does not report. An export must carry these, not the configured ones, or an
    import rebuilds the index with another dimension, HNSW graph or BM25."""
    properties = engine.get_mapping(index).get("properties", {})
    vector = properties.get(VECTOR_FIELD, {})
    hnsw = {**vector.get("method", {}).get("parameters", {}), **vector.get("index_options", {})}
    settings = engine.get_index_settings(index)
    bm25 = settings.get("similarity", {}).get("default", {})
    title = properties.get("title", {})

    def number(value: Any, default: float) -> float:
        try:
            return float(value) if value is not None else default
        except (TypeError, ValueError):
            return default

    return replace(
        fallback,
        dimension=mapped_vector_dimension({"properties": properties}) or fallback.dimension,
        hnsw_m=int(number(hnsw.get("m"), fallback.hnsw_m)),
        hnsw_ef_construction=int(number(hnsw.get("ef_construction"), fallback.hnsw_ef_construction)),
        bm25_k1=number(bm25.get("k1"), fallback.bm25_k1),
        bm25_b=number(bm25.get("b"), fallback.bm25_b),
        shards=int(number(settings.get("number_of_shards"), fallback.shards)),
        replicas=int(number(settings.get("number_of_replicas"), fallback.replicas)),
        vector_encoding=encoding_of(vector, fallback.vector_encoding),
        analysis="core" if title.get("analyzer") == "standard" else "full" if title else fallback.analysis,
    )
