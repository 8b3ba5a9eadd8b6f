"""A search's engine reads outside its stages, within its time like them: concept expansion's read, the check of
the query model against the index's and the capability probe. Slow engines here are wrapped to sleep, or a loopback
port that never answers behind the real clients: what is tested is the orchestrator's deadline."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.identity import META_KEY, identity_of
from esbridge.engines.base import Engine, Hit, SearchResult
from esbridge.engines.capabilities import Capabilities
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.engines.opensearch import OpenSearchEngine
from esbridge.ingest.vector_agreement import agreement
from esbridge.query.concepts import concept_index_name
from esbridge.query.factory import build_searcher, on_engine, prober
from esbridge.query.model_check import ModelGuard
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder
from tests.support.memory_engine import LEX, NOW, SEM, MemoryEngine, StubEmbedder

SLOW_S = 3.0
"""How long a slow read takes: well past every search's time here"""


class HungOpenSearch(OpenSearchEngine):
    """The OpenSearch adapter on a port that never answers, noting when each of its calls ended."""

    def __init__(self, url: str) -> None:
        super().__init__(load_settings(url=url, retries=1, timeout_s=SLOW_S))  # alone, the client waits 2 x 3 s
        self.ended: list[float] = []

    def probe(self) -> Capabilities:
        try:
            return super().probe()
        finally:
            self.ended.append(time.perf_counter())

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        try:
            return super().get_mappings(index)
        finally:
            self.ended.append(time.perf_counter())


def pipeline(**given: Any) -> PipelineSettings:
    """The given settings, with no recency boost and no answers kept (each search runs the whole pipeline)."""
    return PipelineSettings.model_validate({"recency": {"enabled": False}, "cache": {"results": 0}, **given})


async def timed(searcher: HybridSearcher, time_s: float, query: str = "solar energy") -> tuple[SearchResponse, float]:
    began = time.perf_counter()
    response = await searcher.search(SearchRequest(query=query), time_s=time_s)
    return response, time.perf_counter() - began


class SlowConcepts(MemoryEngine):
    """The in-memory engine with a concept vocabulary that answers only after ``SLOW_S``."""

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if index == concept_index_name("idx"):
            await asyncio.sleep(SLOW_S)
            return SearchResult([Hit("photovoltaic", 1.0, {"term": "photovoltaic"})], 1, 1)
        return await super().search(index, body)


def test_a_slow_concept_read_is_given_up_with_a_warning_and_knn_keeps_its_time() -> None:
    settings = pipeline(concepts={"enabled": True})
    searcher = HybridSearcher(SlowConcepts(LEX, SEM), "idx", StubEmbedder(), settings, clock=lambda: NOW)
    response, took = asyncio.run(timed(searcher, 1.0))
    assert took < 1.5  # the search's time, and the moment its answer takes
    assert response.search_mode == "hybrid"  # the query's own vector, searched in the half kNN kept
    assert response.details.concept_terms == []
    [warning] = response.warnings
    assert re.fullmatch(r"concept expansion skipped: the concept index did not answer within 0\.[45]\d*s", warning)


def test_the_concept_read_has_the_knn_timeout_when_that_is_less() -> None:
    settings = pipeline(concepts={"enabled": True}, knn_timeout_s=0.2)
    searcher = HybridSearcher(SlowConcepts(LEX, SEM), "idx", StubEmbedder(), settings, clock=lambda: NOW)
    response, took = asyncio.run(timed(searcher, 10.0))
    assert took < 1.0
    assert response.search_mode == "hybrid"
    assert response.warnings == ["concept expansion skipped: the concept index did not answer within 0.2s"]


class SlowMapping(EmbeddedEngine):
    """The embedded engine, whose next mapping read takes ``SLOW_S``."""

    slow = True

    def get_mapping(self, index: str) -> dict[str, Any]:
        if self.slow:
            self.slow = False
            time.sleep(SLOW_S)
        return super().get_mapping(index)


def test_a_model_check_without_an_answer_in_time_fails_the_search_and_is_not_remembered(tmp_path: Path) -> None:
    engine = SlowMapping(tmp_path / "data")
    try:
        load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
        engine.slow = True
        searcher = build_searcher(
            AsyncEmbeddedEngine(engine=engine), "notes", HashingEmbedder(), PipelineSettings(), num_candidates=50,
            probe=engine,
        )  # fmt: skip

        async def twice() -> tuple[float, SearchResponse]:
            began = time.perf_counter()
            with pytest.raises(errors.EngineTimeout) as refused:
                await searcher.search(SearchRequest(query="photovoltaic cells"), time_s=0.3)
            took = time.perf_counter() - began
            assert "check the query model failed on embedded:" in str(refused.value)
            assert re.search(
                r"the index's model record was not read \(no answer within the 0\.[23]\ds left", str(refused.value)
            )
            assert "its query model could not be checked" in str(refused.value)
            await asyncio.sleep(SLOW_S)  # the slow read ends; the next search reads the record again
            return took, await searcher.search(SearchRequest(query="photovoltaic cells"), time_s=5.0)

        took, checked = asyncio.run(twice())
    finally:
        engine.close()
    assert took < 1.0
    assert checked.warnings == []  # checked, not searched "unchecked" from the read given up on
    assert checked.results[0].doc_id == "solar"


def test_a_model_check_on_a_hung_engine_fails_the_search_and_its_engine_call_ends_with_it(silent_url: str) -> None:
    hung = HungOpenSearch(silent_url)
    settings = pipeline(mode="client")
    searcher = build_searcher(MemoryEngine(LEX, SEM), "idx", HashingEmbedder(), settings, num_candidates=50, probe=hung)

    async def search() -> tuple[float, float]:
        began = time.perf_counter()
        with pytest.raises(errors.EngineTimeout, match="the index's model record was not read"):
            await searcher.search(SearchRequest(query="solar energy"), time_s=0.5)
        took = time.perf_counter() - began
        await asyncio.sleep(0.5)
        return began, took

    began, took = asyncio.run(search())
    assert took < 1.0
    assert len(hung.ended) == 1 and hung.ended[0] - began < 1.0  # the client's call stopped, not only the await


def test_a_probe_without_an_answer_in_time_leaves_the_search_client_side_and_is_tried_again(silent_url: str) -> None:
    hung = HungOpenSearch(silent_url)
    settings = pipeline(fusion="linear")
    searcher = HybridSearcher(MemoryEngine(LEX, SEM), "idx", StubEmbedder(), settings, probe=prober(hung))

    async def twice() -> list[tuple[SearchResponse, float]]:
        answers = [await timed(searcher, 1.0), await timed(searcher, 1.0)]
        await asyncio.sleep(0.5)
        return answers

    answers = asyncio.run(twice())
    for response, took in answers:
        assert took < 1.5
        assert response.search_mode == "hybrid"
        assert response.details.native is not None and response.details.native.used is False
        assert re.fullmatch(
            r"the engine's capabilities were not probed: no answer within 0\.[45]\ds, "
            "half the time left of the search's",
            str(response.details.native.reason),
        )
    assert len(hung.ended) == 2  # each search's probe call ended with its share of the search's time


class SlowEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(SLOW_S)
        return super().embed(texts)


def test_a_model_check_cut_short_while_comparing_vectors_says_so(tmp_path: Path) -> None:
    """An index made by esbridge that records no model is checked by a sample of its vectors against the query
    model's: when that comparison has no answer in time, the refusal names it, not the record (which was read)."""
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)

        def unrecorded(engine: Engine) -> dict[str, Any]:
            mapping = dict(engine.get_mapping("notes"))
            mapping["_meta"] = {key: value for key, value in (mapping.get("_meta") or {}).items() if key != META_KEY}
            return mapping

        guard = ModelGuard(
            "notes", identity_of(HashingEmbedder()), on_engine(engine, unrecorded),
            agreement=on_engine(engine, lambda engine: agreement(engine, "notes", SlowEmbedder())),
        )  # fmt: skip
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "notes", HashingEmbedder(), PipelineSettings(),
                                  model_guard=guard)  # fmt: skip

        async def search() -> float:
            began = time.perf_counter()
            with pytest.raises(errors.EngineTimeout) as refused:
                await searcher.search(SearchRequest(query="photovoltaic cells"), time_s=0.5)
            took = time.perf_counter() - began
            assert "a sample of its vectors was not compared with the query model's (no answer within" in str(
                refused.value
            )
            assert "model record was not read" not in str(refused.value)
            await asyncio.sleep(SLOW_S)  # the comparison's thread ends before the engine closes
            return took

        took = asyncio.run(search())
    finally:
        engine.close()
    assert took < 1.0
