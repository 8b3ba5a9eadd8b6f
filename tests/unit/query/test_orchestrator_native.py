"""Mode selection and the native path of the orchestrator, against in-memory engines.

Native fusion is emulated (tests/support/native_emulation.py) from the engines' own code and docs, so
the parity checks here compare esbridge's client-side fusion with an independent model of the engine.
How the native path falls back when it fails or is refused: test_orchestrator_native_fallbacks.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import SearchResult
from esbridge.query.fusion.qpp import default_model
from tests.support.memory_engine import MemoryEngine, StubEmbedder, doc
from tests.support.native_emulation import EmulatedNativeEngine, same_ranking_ties_aside
from tests.unit.query.native_searchers import (
    LEX,
    SEM,
    ElasticsearchMemory,
    elasticsearch,
    native_searcher,
    opensearch,
    ranked,
    run,
)


@pytest.mark.parametrize(
    ("fusion", "params", "weights"),
    [
        ("rrf", {}, {}),
        ("rrf", {"k": 10}, {"bm25": 1.0, "knn": 3.0}),
        ("linear", {"normalization": "min_max", "combination": "arithmetic_mean", "min_max_floor": 0.001}, {}),
        ("linear", {"normalization": "min_max"}, {"bm25": 0.3, "knn": 0.7}),
        ("linear", {"normalization": "l2"}, {"bm25": 2.0, "knn": 1.0}),
    ],
)
def test_native_opensearch_ranks_as_client_side_fusion(
    fusion: str, params: dict[str, Any], weights: dict[str, float]
) -> None:
    pipeline: dict[str, Any] = {"fusion": fusion, "fusion_params": params}
    if weights:
        pipeline["weights"] = weights
    searcher, engine = native_searcher(opensearch(), **pipeline)
    native = run(searcher, top_n=10, mode="native")
    client = run(searcher, top_n=20, mode="client")
    assert native.search_mode == "native-hybrid"
    assert client.search_mode == "hybrid"
    assert native.warnings == []
    assert len(engine.native_bodies) == 1
    assert same_ranking_ties_aside(ranked(client), [hit.id for hit in native.results])


@pytest.mark.parametrize(
    ("fusion", "params", "weights"),
    [
        ("rrf", {"k": 60}, {}),
        ("rrf", {"k": 20}, {"bm25": 0.5, "knn": 2.0}),
        ("linear", {}, {"bm25": 2.0, "knn": 1.5}),
        ("linear", {"normalization": "l2"}, {}),
    ],
)
def test_native_elasticsearch_ranks_as_client_side_fusion(
    fusion: str, params: dict[str, Any], weights: dict[str, float]
) -> None:
    pipeline: dict[str, Any] = {"fusion": fusion, "fusion_params": params}
    if weights:
        pipeline["weights"] = weights
    searcher, engine = native_searcher(elasticsearch(), ElasticsearchMemory(LEX, SEM), **pipeline)
    native = run(searcher, top_n=10, mode="native")
    client = run(searcher, top_n=20, mode="client")
    assert native.search_mode == "native-hybrid"
    assert list(engine.native_bodies[0]["retriever"]) == [fusion]
    assert same_ranking_ties_aside(ranked(client), [hit.id for hit in native.results])


def test_auto_uses_the_engine_when_it_can_and_says_so() -> None:
    searcher, engine = native_searcher(opensearch())
    response = run(searcher)
    assert response.search_mode == "native-hybrid"
    assert response.details.native is not None and response.details.native.used is True
    assert response.details.native.search_pipeline is not None
    processor = response.details.native.search_pipeline["phase_results_processors"][0]
    assert processor["normalization-processor"] == {  # the default fusion: min-max linear, equal weights
        "normalization": {"technique": "min_max"},
        "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.5, 0.5]}},
    }
    assert engine.plain_bodies == []  # one request, no client-side retrieval


def test_auto_fuses_client_side_without_a_warning_when_the_engine_cannot() -> None:
    searcher, engine = native_searcher(opensearch(neural=None))
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert response.warnings == []
    assert "neural-search" in str(response.details.native and response.details.native.reason)
    assert engine.native_bodies == []


def test_native_mode_on_an_engine_without_it_warns_and_answers_client_side() -> None:
    searcher, _ = native_searcher(elasticsearch(licence="basic"))
    response = run(searcher, mode="native")
    assert response.search_mode == "hybrid"
    assert response.results
    assert any("native hybrid is not available" in w and "licence" in w for w in response.warnings)


def test_native_mode_refuses_a_method_the_engines_cannot_express() -> None:
    searcher, _ = native_searcher(opensearch(), fusion="dbsf")
    with pytest.raises(errors.ConfigError, match="'dbsf' has no server-side equivalent"):
        run(searcher, mode="native")


def test_auto_mode_runs_an_inexpressible_method_client_side() -> None:
    searcher, engine = native_searcher(opensearch(), fusion="dbsf")
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert "dbsf" in str(response.details.native and response.details.native.reason)
    assert engine.native_bodies == []


def test_client_mode_never_asks_the_engine_to_fuse() -> None:
    searcher, engine = native_searcher(opensearch(), mode="client")
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert response.details.native is None
    assert engine.native_bodies == []


def test_without_a_query_vector_native_mode_degrades_to_lexical_only() -> None:
    searcher, engine = native_searcher(opensearch(), embedder=StubEmbedder(fail=True))
    response = run(searcher, mode="native")
    assert response.search_mode == "lexical-only"
    assert engine.native_bodies == []
    assert [hit.id for hit in response.results][:3] == ["l0#0", "l1#0", "l2#0"]
    assert sum("could not be embedded" in w for w in response.warnings) == 1


def test_recency_and_explain_run_on_the_natively_fused_list() -> None:
    dated = {item: doc(item.split("#")[0], modified_at="2026-11-20T00:00:00Z") for item, _ in SEM[:2]}
    inner = MemoryEngine(LEX, SEM, sources=dated)
    searcher, _ = native_searcher(opensearch(), inner, recency={"enabled": True})
    response = run(searcher, explain=True, top_n=20)
    assert response.search_mode == "native-hybrid"
    boosted = {hit.id: hit.explain for hit in response.results if hit.id in dated}
    assert {item: e.recency_multiplier for item, e in boosted.items() if e} == {"both2#0": 1.2, "both1#0": 1.2}
    top = response.results[0].explain
    assert top is not None and set(top.retrievers) == {"native"}
    assert top.retrievers["native"].rank >= 1


def test_native_explain_keeps_the_engines_own_explanation() -> None:
    class Explaining(EmulatedNativeEngine):
        async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
            result = await super().search(index, body)
            if body.get("explain"):
                hits = [
                    {**hit, "_explanation": {"value": hit["_score"], "description": "rrf"}}
                    for hit in result.raw["hits"]["hits"]
                ]
                return SearchResult(result.hits, result.total, 0, raw={"hits": {"hits": hits}})
            return result

    searcher, _ = native_searcher(opensearch(), Explaining(MemoryEngine(LEX, SEM)))
    response = run(searcher, explain=True)
    first = response.results[0].explain
    assert first is not None and first.engine_explanation is not None
    assert first.engine_explanation["description"] == "rrf"


@pytest.mark.parametrize(("fusion", "texts"), [("rrf", False), ("linear", False), ("adaptive", True)])
def test_chunk_texts_are_fetched_only_when_a_stage_reads_them(fusion: str, texts: bool) -> None:
    for mode in ("client", "auto"):  # auto answers natively where the method allows
        searcher, engine = native_searcher(opensearch(), fusion=fusion, mode=mode)
        run(searcher)
        sent = engine.native_bodies or engine.plain_bodies
        assert sent
        for body in sent:
            assert ("body" in body["_source"]) is texts
            assert "title" in body["_source"] and "modified_at" in body["_source"]


def test_document_level_fusion_gives_each_document_one_result_with_both_retrievers_evidence() -> None:
    lexical = [("a#0", 10.0), ("b#0", 5.0), ("c#0", 1.0)]
    semantic = [("b#1", 0.9), ("a#1", 0.8), ("c#0", 0.1)]
    chunks, _ = native_searcher(opensearch(), MemoryEngine(lexical, semantic), mode="client")
    by_chunk = run(chunks, explain=True, collapse=False)
    # Min-max per run, summed: a#0 1.0 and b#1 1.0 tie (id order), a#1 0.875, b#0 0.444, c#0 0.
    assert [hit.id for hit in by_chunk.results] == ["a#0", "b#1", "a#1", "b#0", "c#0"]

    documents, engine = native_searcher(opensearch(), MemoryEngine(lexical, semantic), fusion_level="document")
    by_document = run(documents, explain=True)
    # a stands as a#0 (rank 1 in bm25): 1.0 + 0.875; b as b#1 (rank 1 in knn, b#0 is rank 2): 0.444 + 1.0.
    assert [hit.id for hit in by_document.results] == ["a#0", "b#1", "c#0"]
    assert [hit.doc_id for hit in by_document.results] == ["a", "b", "c"]
    top = by_document.results[0].explain
    assert top is not None and set(top.retrievers) == {"bm25", "knn"}
    assert top.fused_score == pytest.approx(1.875)
    assert by_document.search_mode == "hybrid"  # always fused in esbridge: the engines fuse hits, not documents
    assert engine.native_bodies == []
    assert str(by_document.details.native and by_document.details.native.reason).startswith("document-level fusion")


@pytest.mark.parametrize("mode", ["auto", "native"])
def test_knn_per_type_runs_client_side_with_one_knn_request_per_type(mode: str) -> None:
    searcher, engine = native_searcher(opensearch(), mode=mode, knn_per_type=["tool", "server"])
    response = run(searcher)
    assert engine.native_bodies == []  # natively, one kNN clause over every type would replace the per-type requests
    assert str(response.details.native and response.details.native.reason).startswith("one kNN request per entity")
    warned = [w for w in response.warnings if "native hybrid is not available" in w]
    assert len(warned) == (1 if mode == "native" else 0)


def test_the_default_qpp_fusion_runs_client_side_in_auto_mode_and_says_why() -> None:
    searcher, engine = native_searcher(opensearch(), fusion="qpp")
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert "'qpp' has no server-side equivalent" in str(response.details.native and response.details.native.reason)
    assert "fusion 'linear'" in str(response.details.native and response.details.native.reason)
    assert response.details.fusion_decision is not None
    assert response.details.fusion_decision.knn_share in default_model().shares
    assert engine.native_bodies == []


@pytest.mark.parametrize("explain", [False, True])
def test_details_name_the_search_pipeline_exactly_as_it_was_sent(explain: bool) -> None:
    """With explain on, the pipeline sent carries the hybrid_score_explanation response processor;
    details.native.search_pipeline is documented as the exact pipeline sent, so it carries it too."""
    searcher, engine = native_searcher(opensearch())
    response = run(searcher, explain=explain)
    assert response.details.native is not None and response.details.native.used
    sent = engine.native_bodies[0]["search_pipeline"]
    assert ("response_processors" in sent) is explain
    assert response.details.native.search_pipeline == sent
