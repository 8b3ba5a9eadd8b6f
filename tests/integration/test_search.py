"""Hybrid search end to end on live engines: modes, degradation, filters, explain, invariants, CLI.
Graph expansion and link re-scoring: test_search_graph.py."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect_async
from esbridge.errors import ConfigError, RequestRejected
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.integration.engines import load_records

RECORDS: list[dict[str, Any]] = [
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
     "tags": ["energy"], "links": ["grid"], "modified_at": "2026-11-18T00:00:00Z"},
    {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate electricity.", "tags": ["energy"]},
    {"id": "grid", "title": "Power grid", "text": "Transmission lines carry electricity between regions.",
     "tags": ["infra"]},
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough.",
     "tags": ["food"]},
    {"id": "pii", "title": "Incident PII-2024-0042", "text": "Report of a privacy incident.", "status": "active"},
    {"id": "old", "title": "Old energy memo", "text": "Coal power plants produce electricity.",
     "status": "deprecated"},
]  # fmt: skip


@pytest.fixture
def loaded(engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path) -> str:
    return load_records(engine, alias, embedder, tmp_path, RECORDS)


def search(
    settings: Settings, alias: str, embedder: CachedEmbedder | None, request: SearchRequest, **pipeline: object
) -> SearchResponse:
    async def run() -> SearchResponse:
        engine = connect_async(settings, kind=settings.engine)  # type: ignore[arg-type]
        try:
            hybrid = HybridSearcher(engine, alias, embedder, PipelineSettings(**pipeline))  # type: ignore[arg-type]
            return await hybrid.search(request)
        finally:
            await engine.close()

    return asyncio.run(run())


def assert_invariants(response: SearchResponse, top_n: int) -> None:
    scores = [hit.score for hit in response.results]
    assert len(scores) <= top_n
    assert len({hit.id for hit in response.results}) == len(scores)
    assert all(0 <= score <= 1 for score in scores)
    assert not scores or scores[0] == 1.0
    assert all(a >= b for a, b in itertools.pairwise(scores))


def test_hybrid_search_finds_by_meaning_and_by_words(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    response = search(engine_settings, loaded, embedder, SearchRequest(query="renewable electricity", explain=True))
    assert response.search_mode == "hybrid"
    assert_invariants(response, 10)
    top_docs = [hit.doc_id for hit in response.results[:3]]
    assert "solar" in top_docs and "wind" in top_docs
    assert "old" not in [hit.doc_id for hit in response.results], "deprecated is excluded by default"
    first = response.results[0].explain
    assert first is not None and first.retrievers and first.final_score == 1.0


def test_msearch_execution_answers_like_concurrent_requests(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    request = SearchRequest(query="electricity from the sun", explain=True)
    concurrent = search(engine_settings, loaded, embedder, request)
    single = search(engine_settings, loaded, embedder, request, execution="msearch")
    assert single.search_mode == "hybrid"
    assert [hit.id for hit in single.results] == [hit.id for hit in concurrent.results]


def test_degrades_to_lexical_only_when_knn_times_out(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    response = search(
        engine_settings,
        loaded,
        embedder,
        SearchRequest(query="sourdough"),
        knn_timeout_s=0.000001,
        execution="concurrent",
    )
    assert response.search_mode == "lexical-only"
    assert response.results[0].doc_id == "bread"
    assert response.warnings


def test_bm25_weighted_0_still_ranks_a_lexical_only_answer(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    request = SearchRequest(query="electricity", weights={"bm25": 0.0}, explain=True)
    response = search(engine_settings, loaded, embedder, request, knn_timeout_s=0.000001)
    assert response.search_mode == "lexical-only"
    assert_invariants(response, 10)
    bm25_ranks = [hit.explain.retrievers["bm25"].rank for hit in response.results if hit.explain]
    assert bm25_ranks == sorted(bm25_ranks) and len(bm25_ranks) > 2
    assert response.results[-1].score < 1.0


def test_without_a_model_search_is_lexical_only(engine_settings: Settings, loaded: str) -> None:
    response = search(engine_settings, loaded, None, SearchRequest(query="turbines"))
    assert response.search_mode == "lexical-only"
    assert response.results[0].doc_id == "wind"


def test_filters_apply_to_both_retrievers(engine_settings: Settings, loaded: str, embedder: CachedEmbedder) -> None:
    request = SearchRequest(query="electricity", filters=Filters(terms={"tags": ["infra"]}))
    response = search(engine_settings, loaded, embedder, request)
    assert [hit.doc_id for hit in response.results] == ["grid"]
    everything = search(
        engine_settings, loaded, embedder, SearchRequest(query="coal", filters=Filters(include_deprecated=True))
    )
    assert everything.results[0].doc_id == "old"


def test_a_filter_every_retriever_is_refused_is_the_request_s_fault_not_an_unavailable_engine(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    # Both engines refuse a terms query of more than index.max_terms_count (65,536) values with HTTP 400.
    request = SearchRequest(query="electricity", filters=Filters(terms={"tags": [f"t{n}" for n in range(70_000)]}))
    with pytest.raises(RequestRejected, match=r"max_terms_count|65536"):
        search(engine_settings, loaded, embedder, request)


def test_identifier_queries_go_lexical_with_adaptive_fusion(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    response = search(engine_settings, loaded, embedder, SearchRequest(query="PII-2024-0042", fusion="adaptive"))
    assert response.search_mode == "lexical-only"
    assert response.results[0].doc_id == "pii"


def test_an_identifier_query_whose_bm25_times_out_is_answered_by_knn(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    request = SearchRequest(query="PII-2024-0042", fusion="adaptive")
    response = search(engine_settings, loaded, embedder, request, bm25_timeout_s=0.000001)
    assert response.search_mode == "semantic-only"
    assert_invariants(response, 10)
    assert response.results and any("kNN answered instead" in warning for warning in response.warnings)


def test_an_identifier_query_bm25_finds_nothing_for_is_answered_by_knn(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    """adaptive fuses every run when the lexical one is empty; kNN, not asked at first, is asked then."""
    request = SearchRequest(query="ZQX-7781-9913", fusion="adaptive", explain=True)
    response = search(engine_settings, loaded, embedder, request)
    assert response.search_mode == "hybrid"
    assert_invariants(response, 10)
    assert response.results and all(hit.explain and "knn" in hit.explain.retrievers for hit in response.results)
    assert response.warnings == []  # nothing failed: the decision explains it
    decision = response.details.fusion_decision
    assert decision is not None and decision.effective_weights["knn"] > 0
    assert decision.reason.endswith("found nothing, so kNN was asked as well")


def test_collapse_returns_top_n_documents_when_one_long_document_fills_every_list(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The many chunks of one long note fill both retrievers' lists; the answer still holds top_n documents."""
    paragraph = "Solar panel wiring and the inverter that feeds the grid, described once more in this paragraph."
    records = [
        {"id": "manual", "title": "Solar manual", "text": "\n\n".join([paragraph] * 120)},
        *({"id": f"note{n}", "title": f"Note {n}", "text": f"A solar panel note, number {n}."} for n in range(4)),
    ]
    loaded = load_records(engine, alias, embedder, tmp_path, records)
    request = SearchRequest(query="solar panel inverter wiring", top_n=4)
    response = search(engine_settings, loaded, embedder, request)
    assert_invariants(response, 4)
    assert len(response.results) == 4 and "manual" in {hit.doc_id for hit in response.results}
    assert len({hit.doc_id for hit in response.results}) == 4


def test_a_long_chinese_query_is_cut_to_the_clause_limit_not_refused(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    """Each Han character is a word to the engine: 300 of them are 2,100 clauses over seven fields, which both
    engines refused (BM25 failed, the answer was semantic-only); the query is cut as a long English one is."""
    query = "".join(chr(0x4E00 + 37 * n) for n in range(300))
    response = search(engine_settings, loaded, embedder, SearchRequest(query=query))
    assert response.search_mode == "hybrid", response.warnings
    assert any("too long for the engine's clause limit" in warning for warning in response.warnings)


def test_lifecycle_statuses_match_in_any_casing_and_a_status_filter_lets_its_status_in(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records = [
        {"id": "current", "title": "Tidal turbines", "text": "Tidal turbines in estuaries.", "status": "Active"},
        {"id": "retired", "title": "Tidal turbines, old", "text": "Tidal turbines, retired.", "status": "Deprecated"},
        {"id": "sketch", "title": "Tidal turbines, sketch", "text": "Tidal turbines, a plan.", "status": "DRAFT"},
    ]
    loaded = load_records(engine, alias, embedder, tmp_path, records)

    def found(filters: Filters) -> set[str]:
        request = SearchRequest(query="tidal turbines", filters=filters)
        return {hit.doc_id for hit in search(engine_settings, loaded, embedder, request).results}

    assert found(Filters()) == {"current"}
    assert found(Filters(terms={"status": ["deprecated"]})) == {"retired"}
    assert found(Filters(include_draft=True)) == {"current", "sketch"}


def test_search_command_prints_json_and_a_table(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent)}
    base = ["--url", engine_settings.url or "", "--index", loaded]
    result = CliRunner().invoke(
        main, ["search", "wind power", "--json", "--explain", "--top-n", "3", "--filter", "tags=energy", *base], env=env
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"query", "search_mode", "took_ms", "warnings", "results"} <= set(data)
    assert data["search_mode"] == "hybrid"
    assert len(data["results"]) <= 3
    assert {"id", "doc_id", "score", "title", "explain"} <= set(data["results"][0])
    table = CliRunner().invoke(main, ["search", "wind power", "--explain", *base], env=env)
    assert table.exit_code == 0, table.output
    assert "hybrid," in table.output and "found by" in table.output
    bad = CliRunner().invoke(main, ["search", "x", "--top-n", "500", *base], env=env)
    assert bad.exit_code != 0
    assert "top_n" in bad.output


def test_concept_expansion_appends_nearest_terms(
    engine_settings: Settings, engine: Engine, loaded: str, embedder: CachedEmbedder
) -> None:
    from esbridge.config.pipeline import ConceptSettings
    from esbridge.query.concepts import build_concept_index, concept_index_name, frequent_terms

    request = SearchRequest(query="photovoltaic")
    missing = search(engine_settings, loaded, embedder, request, concepts=ConceptSettings(enabled=True))
    assert missing.search_mode == "hybrid"
    assert any("concept expansion skipped" in warning for warning in missing.warnings)

    bodies = [str(record.get("text", "")) for record in RECORDS]
    terms = frequent_terms(bodies, limit=50, min_documents=1)
    try:
        assert build_concept_index(engine, loaded, terms, embedder).written == len(terms)
        expanded = search(engine_settings, loaded, embedder, request, concepts=ConceptSettings(enabled=True))
        assert expanded.search_mode == "hybrid"
        assert expanded.warnings == []
        assert len(expanded.details.concept_terms) == 3
        assert set(expanded.details.concept_terms) <= set(terms)
    finally:
        engine.delete_index(concept_index_name(loaded), missing_ok=True)


ROUTED: list[dict[str, Any]] = [
    {"id": "cve-db", "title": "Vulnerability database", "text": "Look up a CVE and its exploit.",
     "category": "security"},
    {"id": "flag-bot", "title": "Capture bot", "text": "Look up a CVE write-up for the flag.", "category": "ctf"},
    {"id": "linter", "title": "Python linter", "text": "Look up style problems in Python code.",
     "category": "development"},
]  # fmt: skip


def test_category_routing_filters_inside_both_retrievers(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, ROUTED)
    routing = {"security": ["cve", "exploit"], "development": ["python"]}

    async def run(request: SearchRequest) -> SearchResponse:
        engine_ = connect_async(engine_settings, kind=engine_settings.engine)  # type: ignore[arg-type]
        try:
            return await HybridSearcher(engine_, alias, embedder, routing=routing).search(request)
        finally:
            await engine_.close()

    routed = asyncio.run(run(SearchRequest(query="look up a cve exploit")))
    assert routed.search_mode == "hybrid"
    assert [hit.doc_id for hit in routed.results] == ["cve-db"]  # kNN alone would bring the others too
    assert routed.details.routing is not None and routed.details.routing.category == "security"
    named = asyncio.run(run(SearchRequest(query="look up a cve exploit", category="development")))
    assert [hit.doc_id for hit in named.results] == ["linter"]
    with pytest.raises(ConfigError, match="unknown category 'crypto'; categories: development, security"):
        asyncio.run(run(SearchRequest(query="look up", category="crypto")))
