"""Native hybrid on the live engines: parity with client-side fusion, mode selection, search pipelines.

Where the live engine fuses natively (OpenSearch with neural-search, Elasticsearch with an Enterprise or
trial licence), the parity cases run against it. The engines started by scripts/engines cannot (see
docs/engines.md: neural-search is not on Maven Central; the Elasticsearch integ-test build has no
rank-rrf module and a basic licence), so there those cases report that they did not run, and the same
checks run against the engine's real sub-query answers fused by tests/support/native_emulation.py.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Capabilities, Engine, connect, connect_async
from esbridge.engines.base import AsyncEngine
from esbridge.engines.capabilities import ELASTICSEARCH_FEATURES, OPENSEARCH_NEURAL_FEATURES
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.native import manage
from esbridge.query.orchestrator import HybridSearcher
from tests.integration.engines import engine_url, load_records, probe, require_live
from tests.support.data import SCIFACT, require
from tests.support.native_emulation import EmulatedNativeEngine, same_ranking_ties_aside

CORPUS_SLICE = 300
QUERIES = 8
CONFIGURATIONS: list[dict[str, Any]] = [
    {"fusion": "rrf"},
    {"fusion": "rrf", "fusion_params": {"k": 20}, "weights": {"bm25": 1.0, "knn": 2.0}},
    {"fusion": "linear", "fusion_params": {"normalization": "min_max"}},
    {"fusion": "linear", "fusion_params": {"normalization": "min_max"}, "weights": {"bm25": 0.3, "knn": 0.7}},
]


def scifact_slice() -> tuple[list[dict[str, Any]], list[str]]:
    folder = require(SCIFACT)
    records = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line, _ in zip(lines, range(CORPUS_SLICE), strict=False):
            doc = json.loads(line)
            records.append({"id": doc["_id"], "title": doc["title"], "text": doc["text"]})
    queries = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line, _ in zip(lines, range(QUERIES), strict=False):
            queries.append(json.loads(line)["text"])
    return records, queries


@pytest.fixture
def scifact(engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path) -> tuple[str, list[str]]:
    records, queries = scifact_slice()
    return load_records(engine, alias, embedder, tmp_path, records), queries


def capabilities_of(kind: str) -> Capabilities:
    found = probe(kind)
    assert isinstance(found, Capabilities), found
    return found


def natively_fusing(kind: str) -> bool:
    native = capabilities_of(kind).native_hybrid
    return bool(native.get("hybrid_query") or native.get("rrf_retriever"))


def compare(
    settings: Settings,
    alias: str,
    embedder: CachedEmbedder,
    queries: list[str],
    configuration: dict[str, Any],
    *,
    emulate: bool,
) -> list[str]:
    """Native top 10 against client-side top 20 per query; returns the queries whose rankings differ.

    Both ask each retriever for the same depth (``top_k_min`` 40), so both fuse the same lists.
    """

    async def run() -> list[str]:
        engine: AsyncEngine = connect_async(settings, kind=settings.engine)  # type: ignore[arg-type]
        if emulate:
            engine = EmulatedNativeEngine(engine)
        capabilities = capabilities_of(settings.engine)
        if emulate:
            capabilities = capabilities.model_copy(update={"native_hybrid": dict.fromkeys(_ALL_FEATURES, True)})

        async def known(ends: float) -> Capabilities:
            return capabilities

        pipeline = PipelineSettings(
            **{"recency": {"enabled": False}, "cache": {"results": 0}, "top_k_min": 40, **configuration}
        )
        hybrid = HybridSearcher(engine, alias, embedder, pipeline, probe=known)
        differing = []
        try:
            for query in queries:
                native = await hybrid.search(SearchRequest(query=query, top_n=10, mode="native"))
                client = await hybrid.search(SearchRequest(query=query, top_n=20, mode="client"))
                assert native.search_mode == "native-hybrid", native.warnings
                assert client.search_mode == "hybrid"
                if not same_ranking_ties_aside(_ranked(client), [hit.id for hit in native.results]):
                    differing.append(query)
        finally:
            await engine.close()
        return differing

    return asyncio.run(run())


_ALL_FEATURES = (*OPENSEARCH_NEURAL_FEATURES, *ELASTICSEARCH_FEATURES)


def _ranked(response: SearchResponse) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in response.results]


@pytest.mark.parametrize("configuration", CONFIGURATIONS, ids=lambda c: json.dumps(c, sort_keys=True))
def test_native_fusion_ranks_as_client_side_fusion(
    engine_kind: str,
    engine_settings: Settings,
    scifact: tuple[str, list[str]],
    embedder: CachedEmbedder,
    configuration: dict[str, Any],
) -> None:
    if not natively_fusing(engine_kind):
        notes = capabilities_of(engine_kind).notes
        reasons = "; ".join(n for n in notes if "hybrid" in n or "retriever" in n) or "no native hybrid feature"
        pytest.skip(f"this {engine_kind} does not fuse natively ({reasons}); the emulated parity case ran instead")
    alias, queries = scifact
    assert compare(engine_settings, alias, embedder, queries, configuration, emulate=False) == []


@pytest.mark.parametrize("configuration", CONFIGURATIONS, ids=lambda c: json.dumps(c, sort_keys=True))
def test_native_bodies_on_the_live_engine_rank_as_client_side_fusion(
    engine_settings: Settings,
    scifact: tuple[str, list[str]],
    embedder: CachedEmbedder,
    configuration: dict[str, Any],
) -> None:
    """The native request's sub-queries run on the live engine; their fusion is emulated."""
    alias, queries = scifact
    assert compare(engine_settings, alias, embedder, queries, configuration, emulate=True) == []


def test_auto_mode_says_which_path_answered(
    engine_kind: str, engine_settings: Settings, scifact: tuple[str, list[str]], embedder: CachedEmbedder
) -> None:
    alias, queries = scifact
    runner = CliRunner()
    args = ["search", queries[0], "--url", str(engine_settings.url), "--engine", engine_kind, "--index", alias]
    # The default fusion, qpp, has no native form; this is about one that has.
    env = {"ESBRIDGE_PIPELINE__FUSION": "linear"}
    result = runner.invoke(main, [*args, "--json"], env={**env, "ESBRIDGE_FUSION_MODE": "auto"})
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    if natively_fusing(engine_kind):
        assert answer["search_mode"] == "native-hybrid"
    else:
        assert answer["search_mode"] == "hybrid"
        assert answer["details"]["native"]["used"] is False
        assert answer["details"]["native"]["reason"]
        forced = runner.invoke(main, [*args, "--json", "--mode", "native"], env=env)
        assert forced.exit_code == 0, forced.output
        assert any("native hybrid is not available" in w for w in json.loads(forced.output)["warnings"])


def test_search_pipeline_store_round_trip_on_opensearch() -> None:
    """Create, compare, update and delete a pipeline with processors every OpenSearch has."""
    require_live("opensearch")
    engine = connect(load_settings(url=engine_url("opensearch"), engine="opensearch", timeout_s=30))
    try:
        round_trip(engine)
    finally:
        engine.close()


def round_trip(engine: Engine) -> None:
    name = f"esbridge-test-{uuid.uuid4().hex[:8]}"
    first = {"description": "t", "request_processors": [{"filter_query": {"query": {"term": {"status": "a"}}}}]}
    second = {"description": "t", "request_processors": [{"filter_query": {"query": {"term": {"status": "b"}}}}]}
    try:
        assert manage.apply(engine, name, first)[0] == "created"
        action, state = manage.apply(engine, name, first)
        assert action == "unchanged" and state.in_sync
        action, state = manage.apply(engine, name, second)
        assert action == "updated"
        assert any(line.startswith("+") and '"b"' in line for line in state.diff)
        assert manage.state(engine, name, second).in_sync
    finally:
        assert manage.delete(engine, name) == "deleted"
    assert manage.delete(engine, name) == "absent"
    assert manage.state(engine, name, first).installed is None


def test_pipeline_commands(engine_kind: str, engine_settings: Settings, alias: str) -> None:
    runner = CliRunner(env={"ESBRIDGE_PIPELINE__FUSION": "linear"})  # qpp, the default, has no pipeline form
    args = ["--url", str(engine_settings.url), "--engine", engine_kind, "--index", alias]
    if engine_kind == "elasticsearch":
        result = runner.invoke(main, ["search-pipeline", "apply", *args])
        assert result.exit_code == 1
        assert "retrievers inside each request" in result.output
        deleted = runner.invoke(main, ["search-pipeline", "delete", *args])
        assert deleted.exit_code == 1
        assert "elasticsearch has no search pipelines" in deleted.output
        return
    if not natively_fusing(engine_kind):
        for command in (["show"], ["apply", "--dry-run"], ["delete"]):
            result = runner.invoke(main, ["search-pipeline", *command, *args])
            assert result.exit_code == 1, (command, result.output)
            assert "neural-search plugin is not installed" in result.output, (command, result.output)
        return
    created = runner.invoke(main, ["search-pipeline", "apply", *args])
    assert created.exit_code == 0 and "created" in created.output, created.output
    again = runner.invoke(main, ["search-pipeline", "apply", *args])
    assert "unchanged" in again.output
    shown = json.loads(runner.invoke(main, ["search-pipeline", "show", *args, "--json"]).output)
    assert shown["in_sync"] is True
    assert "deleted" in runner.invoke(main, ["search-pipeline", "delete", *args]).output


def test_pipeline_commands_with_the_default_fusion_name_what_is_missing() -> None:
    """With qpp (no server-side form), a node without neural-search is told that first; one with it is
    told to use linear. Search pipelines are OpenSearch's, so this runs there only."""
    require_live("opensearch")
    args = ["--url", str(engine_url("opensearch")), "--engine", "opensearch", "--index", "esbridge-test-pipeline"]
    result = CliRunner().invoke(main, ["search-pipeline", "apply", "--dry-run", *args])
    assert result.exit_code == 1
    expected = "fusion 'linear', qpp's fixed-weight base" if natively_fusing("opensearch") else "neural-search"
    assert expected in result.output, result.output


class Counting:
    """The live engine, counting the native hybrid requests that reach it."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self.native = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    async def search(self, index: str, body: Any, **options: Any) -> Any:
        if "retriever" in body or "hybrid" in json.dumps(body.get("query", {})):
            self.native += 1
        return await self._engine.search(index, body, **options)


def test_a_native_request_the_engine_refuses_is_not_sent_again(
    engine_kind: str, engine_settings: Settings, alias: str, engine: Engine, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """Capabilities that claim what the engine lacks (neural-search, the rrf and linear retrievers): the engine
    refuses the native request for real; later searches fuse client-side without sending it again."""
    if natively_fusing(engine_kind):
        pytest.skip(f"this {engine_kind} fuses natively: it refuses no native request")
    records = [{"id": f"d{i}", "title": f"solar panel {i}", "text": f"solar energy note {i}"} for i in range(5)]
    load_records(engine, alias, embedder, tmp_path, records)
    claimed = capabilities_of(engine_kind).model_copy(update={"native_hybrid": dict.fromkeys(_ALL_FEATURES, True)})

    async def known(ends: float) -> Capabilities:
        return claimed

    async def run() -> list[SearchResponse]:
        counting = Counting(connect_async(engine_settings, kind=engine_kind))  # type: ignore[arg-type]
        pipeline = PipelineSettings(fusion="linear", cache={"results": 0})  # type: ignore[arg-type]
        hybrid = HybridSearcher(counting, alias, embedder, pipeline, probe=known)
        try:
            answers = []
            for expected in (1, 1, 1):
                answers.append(await hybrid.search(SearchRequest(query="solar energy", top_n=3)))
                assert counting.native == expected, "the refused native request was sent again"
            return answers
        finally:
            await counting.close()

    first, *later = asyncio.run(run())
    assert first.search_mode == later[0].search_mode == "hybrid"
    assert any(w.startswith("native hybrid failed (") for w in first.warnings), first.warnings
    for answer in later:
        assert answer.warnings == [], answer.warnings
        assert answer.details.native is not None and answer.details.native.used is False
        assert (answer.details.native.reason or "").startswith("the engine refused"), answer.details.native
        assert [hit.id for hit in answer.results] == [hit.id for hit in first.results]


def test_a_native_request_refused_in_the_first_round_is_not_sent_again_in_the_deeper_ones(
    engine_kind: str, engine_settings: Settings, alias: str, engine: Engine, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The chunks of one long note fill both lists of 10 (top_n 5), so the retrievers are asked again, deeper. The
    engine refused the native request of the first round for real; the deeper round fuses client-side as the first
    did, instead of sending the refused request again."""
    if natively_fusing(engine_kind):
        pytest.skip(f"this {engine_kind} fuses natively: it refuses no native request")
    paragraph = "Solar panel wiring and the inverter that feeds the grid, described once more in this paragraph."
    records = [
        {"id": "manual", "title": "Solar manual", "text": "\n\n".join([paragraph] * 120)},
        *({"id": f"note{n}", "title": f"Note {n}", "text": f"A solar panel note, number {n}."} for n in range(3)),
    ]
    load_records(engine, alias, embedder, tmp_path, records)
    claimed = capabilities_of(engine_kind).model_copy(update={"native_hybrid": dict.fromkeys(_ALL_FEATURES, True)})

    async def known(ends: float) -> Capabilities:
        return claimed

    async def run() -> tuple[SearchResponse, int]:
        counting = Counting(connect_async(engine_settings, kind=engine_kind))  # type: ignore[arg-type]
        pipeline = PipelineSettings(fusion="linear", cache={"results": 0})  # type: ignore[arg-type]
        hybrid = HybridSearcher(counting, alias, embedder, pipeline, probe=known)
        try:
            answer = await hybrid.search(SearchRequest(query="solar panel inverter wiring", top_n=5))
            return answer, counting.native
        finally:
            await counting.close()

    answer, sent = asyncio.run(run())
    assert answer.details.top_k >= 40, answer.details  # asked again, deeper
    assert sent == 1, "a deeper round sent the refused native request again"
    assert answer.details.rounds >= 2
    assert answer.search_mode == "hybrid"
    assert sorted(hit.doc_id for hit in answer.results) == ["manual", "note0", "note1", "note2"]
    refusals = [w for w in answer.warnings if w.startswith("native hybrid failed (")]
    assert len(refusals) == 1 and answer.warnings == refusals, answer.warnings
    assert answer.details.native is not None and answer.details.native.used is False
