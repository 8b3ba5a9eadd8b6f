"""Elasticsearch native hybrid: ``rrf`` and ``linear`` retriever bodies (pure functions).

A compound retriever runs a ``standard`` retriever (the BM25 query) and a ``knn`` retriever and fuses
their top ``rank_window_size`` hits on the coordinating node. ``rrf`` exists from 8.16 and ``linear``
from 8.18, both under an Enterprise (or trial) licence; per-retriever RRF weights from 9.2
(``capabilities.elasticsearch_native_hybrid``).

References: elastic.co docs, reference/elasticsearch/rest-apis/retrievers (rrf-retriever,
linear-retriever): ``rrf`` scores ``sum_i weight_i / (rank_constant + rank_i)``, ranks from 1;
``linear`` scores ``sum_i weight_i * normalizer(score_i)`` with normalizers ``minmax``, ``l2_norm`` and
``none``, a retriever that missed a document adding nothing. Both match esbridge's ``rrf`` and
``linear`` (``combination="sum"``) exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.engines.base import JSON
from esbridge.query.native.fusion import NativeFusion

NORMALIZERS = {"min_max": "minmax", "l2": "l2_norm"}


def unavailable(fusion: NativeFusion, features: Mapping[str, bool]) -> str | None:
    """Why this server cannot run ``fusion`` natively, or None when it can."""
    if fusion.method == "rrf":
        if not features.get("rrf_retriever"):
            return "the rrf retriever needs Elasticsearch 8.16+ with an Enterprise or trial licence"
        if not fusion.equal_weights and not features.get("rrf_weights"):
            return "weighted RRF retrievers need Elasticsearch 9.2 or later"
        return None
    if not features.get("linear_retriever"):
        return "the linear retriever needs Elasticsearch 8.18+ with an Enterprise or trial licence"
    if fusion.normalization == "l2" and not features.get("linear_l2_norm"):
        return "the linear retriever's l2_norm normalizer needs Elasticsearch 8.19, or 9.1 or later"
    if fusion.min_max_floor:
        return "Elasticsearch's minmax normalizer gives a retriever's lowest hit 0; min_max_floor cannot be sent"
    return None


def retriever_body(
    fusion: NativeFusion,
    bm25: Mapping[str, Any],
    knn: Mapping[str, Any],
    *,
    size: int,
    source_fields: Sequence[str],
) -> JSON:
    """One ``_search`` body whose ``retriever`` fuses the BM25 query and the kNN search as ``fusion`` does.

    ``bm25`` and ``knn`` are the bodies ``esbridge.query.bodies`` builds for the client-side path; the BM25
    ``query`` and the ``knn`` section (filters inside, as pre-filters) are reused unchanged. The window is
    ``size``, the depth each retriever has client-side.
    """
    standard: JSON = {"standard": {"query": bm25["query"]}}
    nearest: JSON = {"knn": dict(knn["knn"])}
    lexical_weight, semantic_weight = fusion.weights
    compound: JSON
    if fusion.method == "rrf":
        children: list[JSON] = [standard, nearest]
        if not fusion.equal_weights:
            children = [
                {"retriever": standard, "weight": lexical_weight},
                {"retriever": nearest, "weight": semantic_weight},
            ]
        compound = {"rrf": {"retrievers": children, "rank_constant": fusion.rank_constant, "rank_window_size": size}}
    else:
        normalizer = NORMALIZERS[fusion.normalization]
        compound = {
            "linear": {
                "retrievers": [
                    {"retriever": standard, "weight": lexical_weight, "normalizer": normalizer},
                    {"retriever": nearest, "weight": semantic_weight, "normalizer": normalizer},
                ],
                "rank_window_size": size,
            }
        }
    return {"size": size, "_source": list(source_fields), "retriever": compound}
