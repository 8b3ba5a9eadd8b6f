"""Every search request a search stage sends carries the time the search has left for it as ``timeout``, so the
engine answers what it found by then (``timed_out``) instead of searching on after the client gave up: requests
sent alone (``execution = "concurrent"``, kNN once the vector exists, the msearch fallback, the graph stage's link
reads, grouping's record read, the native hybrid request) as well as those in one ``_msearch``. On the embedded
engine, which checks a search body's keys as the clusters do; the native request on the in-memory engines that
emulate the engines' fusion."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge.config.pipeline import GraphSettings, PipelineSettings
from esbridge.engines.base import SearchResult
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.query.bodies import bm25_body, knn_body, links_body
from esbridge.query.deadline import with_timeout
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.hashing import HashingEmbedder
from tests.unit.query.native_searchers import (
    LEX,
    SEM,
    ElasticsearchMemory,
    elasticsearch,
    native_searcher,
    opensearch,
    run,
)
from tests.unit.query.test_graph_time import INDEX, QUICK, SEARCH_TIME_MS
from tests.unit.query.test_graph_time import engine as engine
from tests.unit.query.test_grouping_search import indexed

VECTOR = [0.1, 0.2, 0.3]


@pytest.mark.parametrize(("seconds", "sent"), [(2.5, "2500ms"), (0.0004, "1ms"), (0.0, "1ms"), (12.3456, "12346ms")])
def test_the_time_left_is_sent_at_the_top_of_the_body_to_the_millisecond(seconds: float, sent: str) -> None:
    body = bm25_body("opensearch", "solar", size=5, filters=Filters())
    assert with_timeout(body, seconds) == {**body, "timeout": sent}
    assert "timeout" not in body, "the body built is not changed"


def test_elasticsearch_knn_gets_its_time_beside_the_knn_section_which_refuses_it() -> None:
    body = with_timeout(knn_body("elasticsearch", VECTOR, k=3, filters=Filters(), num_candidates=10), 1.0)
    assert body["timeout"] == "1000ms"
    assert "timeout" not in body["knn"]  # "[knn] unknown field [timeout]" (status 400)


@pytest.mark.parametrize("seconds", [None, math.inf], ids=["no limit", "no deadline"])
def test_a_search_without_a_limit_sends_no_timeout(seconds: float | None) -> None:
    body = links_body(["a"], size=5, filters=Filters())
    assert with_timeout(body, seconds) == body


class Recorded(AsyncEmbeddedEngine):
    """The embedded engine, keeping each search body it is sent (one by one or in an ``_msearch``)."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        super().__init__(engine=engine)
        self.bodies: list[Mapping[str, Any]] = []

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        self.bodies.append(body)
        return await super().search(index, body)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        self.bodies.extend(bodies)
        return await super().msearch(index, bodies)


def limits_ms(bodies: Sequence[Mapping[str, Any]]) -> list[int]:
    """The ``timeout`` of each body in milliseconds; a body without one fails the test, naming it."""
    found = []
    for body in bodies:
        sent = re.fullmatch(r"(\d+)ms", str(body.get("timeout")))
        assert sent is not None, f"sent without the time left: {body}"
        found.append(int(sent.group(1)))
    return found


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine, _ = indexed(tmp_path)
    yield engine
    engine.close()


@pytest.mark.parametrize("execution", ["concurrent", "msearch"])
def test_the_retrievers_and_the_grouping_read_carry_the_time_left(registry: EmbeddedEngine, execution: str) -> None:
    recorded = Recorded(registry)
    pipeline = PipelineSettings(execution=execution, bm25_timeout_s=2.0, knn_timeout_s=3.0)  # type: ignore[arg-type]
    searcher = HybridSearcher(recorded, "registry", HashingEmbedder(), pipeline)
    response = asyncio.run(searcher.search(SearchRequest(query="forecast rain for a city", top_n=5, group=True)))
    assert response.search_mode == "hybrid" and response.warnings == []
    assert response.groups is not None and response.groups.tools[0].description == "Forecast rain\nfor a city."
    bm25, knn, grouping = recorded.bodies
    assert "knn" in knn["query"] and "ids" in grouping["query"]
    sent = limits_ms([bm25, knn, grouping])
    assert 0 < sent[0] <= 2000 and 0 < sent[1] <= 3000, "each retriever's own timeout, or less"
    search_time_ms = 1000 * (pipeline.embed_timeout_s + 2 * 3.0)
    assert 0 < sent[2] <= search_time_ms, "grouping has what is left of the search's time"


@pytest.mark.parametrize("mode", ["expand", "rescore"])
def test_the_graph_stage_s_link_reads_carry_the_time_left(engine: EmbeddedEngine, mode: str) -> None:
    recorded = Recorded(engine)
    pipeline = QUICK.model_copy(update={"graph": GraphSettings(mode=mode, keep_top=1)})  # type: ignore[arg-type]
    searcher = HybridSearcher(recorded, INDEX, None, pipeline)
    response = asyncio.run(searcher.search(SearchRequest(query="solar panels", top_n=5, graph=True)))
    assert "graph" in response.details.timings_ms and not any("skipped" in w for w in response.warnings)
    retrieval, *reads = recorded.bodies
    assert reads, "the graph stage read the links"
    sent = limits_ms([retrieval, *reads])
    assert all(0 < limit <= SEARCH_TIME_MS for limit in sent), sent  # the time left, to 0.01 s
    assert sent[1:] == sorted(sent[1:], reverse=True), "each later read has what is left, not the stage's start"


@pytest.mark.parametrize("dialect", ["opensearch", "elasticsearch"])
def test_the_native_hybrid_request_carries_the_time_left(dialect: str) -> None:
    """OpenSearch's hybrid query with its search pipeline and Elasticsearch's retrievers alike: the engine fuses
    with the slower retriever's time, or what is left of the search's, and answers what it found by then."""
    timeouts: dict[str, Any] = {"bm25_timeout_s": 2.0, "knn_timeout_s": 3.0}
    if dialect == "opensearch":
        searcher, engine = native_searcher(opensearch(), **timeouts)
    else:
        searcher, engine = native_searcher(elasticsearch(), ElasticsearchMemory(LEX, SEM), **timeouts)
    response = run(searcher, top_n=5, mode="native")
    assert response.search_mode == "native-hybrid" and response.warnings == []
    (body,) = engine.native_bodies
    assert "hybrid" in body["query"] if dialect == "opensearch" else "retriever" in body
    (sent,) = limits_ms([body])
    assert 2000 < sent <= 3000, "the slower retriever's timeout, or the search's time left when that is less"
