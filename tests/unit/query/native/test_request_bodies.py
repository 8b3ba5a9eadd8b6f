"""Native request bodies against the engines' documented formats (sources in each module's docstring)."""

from __future__ import annotations

from typing import Any

from esbridge.engines.capabilities import elasticsearch_native_hybrid, opensearch_native_hybrid
from esbridge.query.native import elasticsearch, opensearch
from esbridge.query.native.fusion import NativeFusion

OS_3 = opensearch_native_hybrid({"opensearch-neural-search": "3.6.0"})
OS_2_19 = opensearch_native_hybrid({"opensearch-neural-search": "2.19.1"})
OS_2_12 = opensearch_native_hybrid({"opensearch-neural-search": "2.12.0"})
NO_NEURAL = opensearch_native_hybrid({})
BM25: dict[str, Any] = {"size": 20, "_source": ["title"], "query": {"match": {"body": "solar"}}}
OS_KNN: dict[str, Any] = {"size": 20, "_source": ["title"], "query": {"knn": {"embedding": {"vector": [0.1], "k": 20}}}}
ES_KNN: dict[str, Any] = {
    "size": 20,
    "_source": ["title"],
    "knn": {"field": "embedding", "query_vector": [0.1], "k": 20},
}


def test_opensearch_rrf_pipeline_is_a_score_ranker_processor() -> None:
    pipeline = opensearch.search_pipeline(NativeFusion("rrf", rank_constant=40), OS_3)
    assert pipeline["phase_results_processors"] == [
        {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 40}}}
    ]
    assert "response_processors" not in pipeline


def test_opensearch_weighted_rrf_sends_shares_in_sub_query_order() -> None:
    pipeline = opensearch.search_pipeline(NativeFusion("rrf", (3.0, 1.0)), OS_3)
    combination = pipeline["phase_results_processors"][0]["score-ranker-processor"]["combination"]
    assert combination["parameters"] == {"weights": [0.75, 0.25]}


def test_opensearch_linear_pipeline_is_a_normalization_processor_with_arithmetic_mean() -> None:
    pipeline = opensearch.search_pipeline(NativeFusion("linear", (1.0, 4.0), normalization="l2"), OS_3, explain=True)
    assert pipeline["phase_results_processors"] == [
        {
            "normalization-processor": {
                "normalization": {"technique": "l2"},
                "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.2, 0.8]}},
            }
        }
    ]
    assert pipeline["response_processors"] == [{"hybrid_score_explanation": {}}]


def test_opensearch_hybrid_body_reuses_the_retrievers_queries() -> None:
    pipeline = opensearch.search_pipeline(NativeFusion("rrf"), OS_3)
    body = opensearch.hybrid_body(
        BM25, OS_KNN, size=20, pipeline=pipeline, features=OS_3, source_fields=["title"], explain=True
    )
    assert body == {
        "size": 20,
        "_source": ["title"],
        "query": {"hybrid": {"queries": [BM25["query"], OS_KNN["query"]], "pagination_depth": 20}},
        "search_pipeline": pipeline,
        "explain": True,
    }


def test_older_opensearch_gets_no_pagination_depth_or_explain() -> None:
    pipeline = opensearch.search_pipeline(NativeFusion("linear"), OS_2_12, explain=True)
    body = opensearch.hybrid_body(
        BM25, OS_KNN, size=20, pipeline=pipeline, features=OS_2_12, source_fields=["title"], explain=True
    )
    assert "pagination_depth" not in body["query"]["hybrid"]
    assert "explain" not in body
    assert "response_processors" not in pipeline


def test_opensearch_says_why_a_node_cannot_fuse() -> None:
    assert "neural-search plugin is not installed" in str(opensearch.unavailable(NativeFusion("rrf"), NO_NEURAL))
    assert "2.19" in str(opensearch.unavailable(NativeFusion("rrf"), OS_2_12))
    assert opensearch.unavailable(NativeFusion("linear"), OS_2_12) is None
    assert "3.1" in str(opensearch.unavailable(NativeFusion("rrf", (1.0, 2.0)), OS_2_19))
    assert opensearch.unavailable(NativeFusion("rrf", (1.0, 2.0)), OS_3) is None
    assert opensearch.unavailable(NativeFusion("linear", min_max_floor=0.001), OS_3) is None
    assert "0.001" in str(opensearch.unavailable(NativeFusion("linear", min_max_floor=0.01), OS_3))


def test_elasticsearch_rrf_retriever_body() -> None:
    body = elasticsearch.retriever_body(
        NativeFusion("rrf", rank_constant=60), BM25, ES_KNN, size=20, source_fields=["t"]
    )
    assert body == {
        "size": 20,
        "_source": ["t"],
        "retriever": {
            "rrf": {
                "retrievers": [{"standard": {"query": BM25["query"]}}, {"knn": ES_KNN["knn"]}],
                "rank_constant": 60,
                "rank_window_size": 20,
            }
        },
    }


def test_elasticsearch_weighted_rrf_wraps_each_child_with_its_weight() -> None:
    body = elasticsearch.retriever_body(NativeFusion("rrf", (2.0, 1.0)), BM25, ES_KNN, size=20, source_fields=[])
    children = body["retriever"]["rrf"]["retrievers"]
    assert children == [
        {"retriever": {"standard": {"query": BM25["query"]}}, "weight": 2.0},
        {"retriever": {"knn": ES_KNN["knn"]}, "weight": 1.0},
    ]


def test_elasticsearch_linear_retriever_body() -> None:
    body = elasticsearch.retriever_body(NativeFusion("linear", (2.0, 1.5)), BM25, ES_KNN, size=10, source_fields=[])
    assert body["retriever"] == {
        "linear": {
            "retrievers": [
                {"retriever": {"standard": {"query": BM25["query"]}}, "weight": 2.0, "normalizer": "minmax"},
                {"retriever": {"knn": ES_KNN["knn"]}, "weight": 1.5, "normalizer": "minmax"},
            ],
            "rank_window_size": 10,
        }
    }


def test_elasticsearch_says_why_a_server_cannot_fuse() -> None:
    basic = elasticsearch_native_hybrid("9.5.3", "basic")
    enterprise_9_1 = elasticsearch_native_hybrid("9.1.0", "enterprise")
    assert "licence" in str(elasticsearch.unavailable(NativeFusion("rrf"), basic))
    assert "licence" in str(elasticsearch.unavailable(NativeFusion("linear"), basic))
    assert "9.2" in str(elasticsearch.unavailable(NativeFusion("rrf", (1.0, 2.0)), enterprise_9_1))
    assert elasticsearch.unavailable(NativeFusion("rrf"), enterprise_9_1) is None
    assert "min_max_floor" in str(
        elasticsearch.unavailable(NativeFusion("linear", min_max_floor=0.001), enterprise_9_1)
    )
