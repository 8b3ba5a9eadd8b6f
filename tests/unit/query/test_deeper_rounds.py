"""The deeper retrieval rounds of a collapsed search (``HybridSearcher._deep_enough``), against in-memory engines:
they keep the first round's native decision and query vector, and the answer's details count every round.

Twelve chunks of one long document fill both lists of 10 (top_n 3: top_k 10), so the retrievers are asked
again for 40 chunks, which hold the two short documents too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.onnx_runtime import OnnxEmbedder
from esbridge.embeddings.profiles import MINILM
from esbridge.engines.base import SearchResult
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.hashing import HashingEmbedder
from tests.support.memory_engine import MemoryEngine, run, searcher
from tests.support.models import require_stored
from tests.support.native_emulation import EmulatedNativeEngine
from tests.unit.query.native_searchers import native_searcher, opensearch
from tests.unit.query.native_searchers import run as run_native
from tests.unit.query.test_orchestrator_native_fallbacks import unknown

LONG = [(f"long#{n}", 20.0 - n) for n in range(12)]
SHORT = [("a#0", 5.0), ("b#0", 4.0)]
BM25 = LONG + SHORT
KNN = [(item, score / 20) for item, score in BM25]


def documents(response: SearchResponse) -> list[str]:
    return [hit.doc_id for hit in response.results]


def test_a_native_request_refused_in_the_first_round_is_not_sent_again_in_the_deeper_ones() -> None:
    engine = EmulatedNativeEngine(MemoryEngine(BM25, KNN), fail_native=unknown("query [hybrid]"))
    hybrid, _ = native_searcher(opensearch(), engine, top_k_min=10)
    response = run_native(hybrid, top_n=3)
    assert len(engine.native_bodies) == 1, "the deeper round sent the refused native request again"
    assert documents(response) == ["long", "a", "b"] and response.details.top_k == 40
    assert response.details.rounds == 2 and response.search_mode == "hybrid"
    assert [w for w in response.warnings if w.startswith("native hybrid failed (")] == [response.warnings[0]]
    assert len(response.warnings) == 1, response.warnings
    assert response.details.native is not None and response.details.native.used is False
    assert "unknown query [hybrid]" in str(response.details.native.reason)


class _StalledNative(EmulatedNativeEngine):
    """An engine whose native hybrid requests hang (a node overloaded by them); its plain searches answer."""

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "hybrid" in body.get("query", {}):
            self.native_bodies.append(body)
            await asyncio.sleep(10)
        return await super().search(index, body)


def test_a_native_request_that_timed_out_in_the_first_round_does_not_use_up_the_deeper_ones() -> None:
    """Sent again, the hung native request took the deeper rounds' whole timeout, and the answer kept the first
    round's one document; fused by esbridge as in the first round, the deeper round finds the three."""
    engine = _StalledNative(MemoryEngine(BM25, KNN))
    hybrid, _ = native_searcher(opensearch(), engine, top_k_min=10, bm25_timeout_s=0.2, knn_timeout_s=0.2)
    response = run_native(hybrid, top_n=3)
    assert documents(response) == ["long", "a", "b"] and response.details.top_k == 40
    assert response.warnings == ["native hybrid failed (no answer within 0.2s); fused by esbridge instead"]
    assert len(engine.native_bodies) == 1 and response.details.rounds == 2
    assert 200 <= response.details.timings_ms["native"] < 300, "the time the native request took is the search's"


def test_a_native_answer_in_the_first_round_is_asked_natively_again() -> None:
    engine = EmulatedNativeEngine(MemoryEngine(BM25, KNN))
    hybrid, _ = native_searcher(opensearch(), engine, top_k_min=10)
    response = run_native(hybrid, top_n=3)
    assert response.search_mode == "native-hybrid" and documents(response) == ["long", "a", "b"]
    assert len(engine.native_bodies) == 2 and engine.plain_bodies == []
    assert response.details.rounds == 2 and response.warnings == []


class CountingEmbedder(HashingEmbedder):
    """A real (bag-of-words) embedder that counts the texts it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed(texts)


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_without_an_embedding_cache_the_query_is_embedded_once_however_many_rounds_run(execution: str) -> None:
    answers = []
    for cached in (0, 1000):
        embedder = CountingEmbedder()
        pipeline: dict[str, Any] = {"fusion": "rrf", "execution": execution, "cache": {"embeddings": cached}}
        answers.append(run(searcher(MemoryEngine(BM25, KNN), embedder, **pipeline), top_n=3))  # type: ignore[arg-type]
        assert embedder.texts == ["solar energy"], f"embedding cache {cached}"
    uncached, cached_answer = answers
    assert uncached.details.rounds == cached_answer.details.rounds == 2
    assert [(hit.id, hit.score) for hit in uncached.results] == [(hit.id, hit.score) for hit in cached_answer.results]
    assert documents(uncached) == ["long", "a", "b"] and uncached.warnings == cached_answer.warnings == []


class _Paced(MemoryEngine):
    """Every BM25 and kNN request takes ``pace`` seconds."""

    def __init__(self, *lists: Any, pace: float) -> None:
        super().__init__(*lists)
        self.pace = pace

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        await asyncio.sleep(self.pace)
        return await super().search(index, body)


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_the_timings_add_up_every_round(execution: str) -> None:
    """Two rounds of 0.1 s per request: each retriever's step took 0.2 s in all, the last round alone 0.1 (the
    in-memory engine answers an msearch's two requests one after the other: 0.2 s a round)."""
    response = run(searcher(_Paced(BM25, KNN, pace=0.1), fusion="rrf", execution=execution), top_n=3)
    timings = response.details.timings_ms
    expected = {"msearch": 400} if execution == "msearch" else {"bm25": 200, "knn": 200}
    for step, ms in expected.items():
        assert ms <= timings[step] < ms + 150, timings
    assert response.details.rounds == 2 and documents(response) == ["long", "a", "b"]
    assert "embed" in timings and response.took_ms >= max(expected.values())
    single = run(searcher(_Paced(SHORT, [], pace=0.1), fusion="rrf", execution=execution), top_n=3)
    assert single.details.rounds == 1


class _KnnFailsDeep(_Paced):
    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "knn" in body.get("query", {}) and int(body["size"]) > 10:
            await asyncio.sleep(self.pace)
            raise errors.EngineResponseError("boom", url=self.url, operation="search", index=index, status=500)
        return await super().search(index, body)


def test_a_deeper_round_that_failed_is_counted_in_rounds_and_timings() -> None:
    """The answer is the first round's; the time the failed round took is the search's too."""
    response = run(searcher(_KnnFailsDeep(BM25, KNN, pace=0.1), fusion="rrf"), top_n=3)
    for step in ("bm25", "knn"):
        assert 200 <= response.details.timings_ms[step] < 350, response.details.timings_ms
    assert documents(response) == ["long"] and response.details.top_k == 10 and response.details.rounds == 2
    assert any("asked again for 40 chunks" in warning for warning in response.warnings), response.warnings


class _CountingModel:
    """A real model (all-MiniLM-L6-v2, int8 ONNX), counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.model = OnnxEmbedder(MINILM, precision="int8")
        self.name, self.identity = self.model.name, self.model.identity
        self.dimension, self.max_tokens = self.model.dimension, self.model.max_tokens
        self.texts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.model.embed(texts)


def test_on_the_embedded_engine_a_real_model_embeds_the_query_once_and_the_answer_is_the_same(tmp_path: Path) -> None:
    """The chunks of one long manual fill both lists of 10; the deeper round searches kNN with the first round's
    vector, and answers as a search whose vector came from the embedding cache does."""
    require_stored(MINILM, "int8")
    model = _CountingModel()
    paragraph = "Solar panel wiring and the inverter that feeds the grid, described once more in this paragraph."
    records = [
        {"id": "manual", "title": "Solar manual", "text": "\n\n".join([paragraph] * 120)},
        *({"id": f"note{n}", "title": f"Note {n}", "text": f"A solar panel note, number {n}."} for n in range(3)),
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "db")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=model.dimension))
    ingest(path, engine=engine, manager=manager, embedder=model, options=IngestOptions(source="t"))
    answers = []
    try:
        for cached in (0, 1000):
            model.texts.clear()
            pipeline = PipelineSettings(fusion="rrf", cache={"embeddings": cached})  # type: ignore[arg-type]
            hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "notes", model, pipeline)
            answers.append(asyncio.run(hybrid.search(SearchRequest(query="solar panel inverter wiring", top_n=4))))
            assert model.texts == ["solar panel inverter wiring"], f"embedding cache {cached}"
    finally:
        engine.close()
    uncached, from_cache = answers
    assert uncached.details.rounds == 2 and uncached.details.top_k == 40, uncached.details
    assert [(hit.id, hit.score) for hit in uncached.results] == [(hit.id, hit.score) for hit in from_cache.results]
    assert sorted(documents(uncached)) == ["manual", "note0", "note1", "note2"] and uncached.search_mode == "hybrid"
