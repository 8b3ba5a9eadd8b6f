"""OpenSearch native hybrid: search pipeline definitions and ``hybrid`` query bodies (pure functions).

A ``hybrid`` query runs its sub-queries (here BM25 first, kNN second) and hands their top hits to the
search pipeline's phase-results processor, which normalises and combines them on the coordinating node:
``normalization-processor`` for linear combination, ``score-ranker-processor`` for RRF. Both belong to
the neural-search plugin; ``capabilities.opensearch_native_hybrid`` says which a node has.

References: docs.opensearch.org, search-pipelines/normalization-processor, score-ranker-processor,
explanation-processor, query-dsl/compound/hybrid; the processors' source in opensearch-project/neural-search
(``ScoreCombinationUtil``: weights in [0, 1] summing to 1; ``ArithmeticMeanScoreCombinationTechnique``:
a sub-query that missed a document counts 0.0 with its weight; ``MinMaxScoreNormalizationTechnique``:
the lowest hit of a sub-query gets 0.001 rather than 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.engines.base import JSON
from esbridge.query.native.fusion import NativeFusion

PIPELINE_DESCRIPTION = "esbridge hybrid search: BM25 and kNN sub-queries fused on the node"
OPENSEARCH_MIN_MAX_FLOOR = 0.001


def pipeline_name(index: str) -> str:
    """The name ``esbridge pipeline apply`` gives the search pipeline of ``index``."""
    return f"{index}-hybrid"


def unavailable(fusion: NativeFusion, features: Mapping[str, bool]) -> str | None:
    """Why this node cannot run ``fusion`` natively, or None when it can."""
    if not features.get("hybrid_query"):
        return "the node has no hybrid query (the neural-search plugin is not installed)"
    if fusion.method == "rrf":
        if not features.get("score_ranker_processor"):
            return "the node has no score-ranker-processor (RRF needs neural-search 2.19 or later)"
        if not fusion.equal_weights and not features.get("rrf_weights"):
            return "weighted RRF needs neural-search 3.1 or later; this node only has equal weights"
    elif not features.get("normalization_processor"):
        return "the node has no normalization-processor"
    elif fusion.min_max_floor not in (0.0, OPENSEARCH_MIN_MAX_FLOOR):
        floor = fusion.min_max_floor
        return f"OpenSearch's min_max gives a sub-query's lowest hit {OPENSEARCH_MIN_MAX_FLOOR}, not {floor}"
    return None


def search_pipeline(fusion: NativeFusion, features: Mapping[str, bool], *, explain: bool = False) -> JSON:
    """The search pipeline that fuses a [BM25, kNN] hybrid query as ``fusion`` does client-side.

    Weights go as shares summing to 1, in sub-query order. ``combination="sum"`` becomes ``arithmetic_mean``:
    with weights summing to 1 the two are the same. ``explain`` adds the ``hybrid_score_explanation``
    response processor when the node has it.
    """
    weights = list(fusion.shares)
    processor: JSON
    if fusion.method == "rrf":
        combination: JSON = {"technique": "rrf", "rank_constant": fusion.rank_constant}
        if not fusion.equal_weights:
            combination["parameters"] = {"weights": weights}
        processor = {"score-ranker-processor": {"combination": combination}}
    else:
        processor = {
            "normalization-processor": {
                "normalization": {"technique": fusion.normalization},
                "combination": {"technique": "arithmetic_mean", "parameters": {"weights": weights}},
            }
        }
    pipeline: JSON = {"description": PIPELINE_DESCRIPTION, "phase_results_processors": [processor]}
    if explain and features.get("hybrid_explain"):
        pipeline["response_processors"] = [{"hybrid_score_explanation": {}}]
    return pipeline


def hybrid_body(
    bm25: Mapping[str, Any],
    knn: Mapping[str, Any],
    *,
    size: int,
    pipeline: JSON,
    features: Mapping[str, bool],
    source_fields: Sequence[str],
    explain: bool = False,
) -> JSON:
    """One ``_search`` body: a hybrid query over the BM25 and kNN retrievers' own queries.

    ``bm25`` and ``knn`` are the bodies ``esbridge.query.bodies`` builds for the client-side path; their
    ``query`` parts become the sub-queries unchanged, filters included (inside the kNN clause, so they
    stay pre-filters). The pipeline travels in the body (a temporary pipeline), so a request's own
    weights apply and no installed pipeline can drift from the settings. Each sub-query collects ``size``
    hits, as each retriever does client-side.
    """
    hybrid: JSON = {"queries": [bm25["query"], knn["query"]]}
    if features.get("pagination_depth"):
        hybrid["pagination_depth"] = size
    body: JSON = {
        "size": size,
        "_source": list(source_fields),
        "query": {"hybrid": hybrid},
        "search_pipeline": pipeline,
    }
    if explain and features.get("hybrid_explain"):
        body["explain"] = True
    return body
