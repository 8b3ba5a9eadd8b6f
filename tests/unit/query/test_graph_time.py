"""The graph stage's link reads under what is left of the search's time, on the embedded engine: a hung read
leaves the answer as it is without the graph, with a warning naming what was skipped."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.config.pipeline import GraphSettings, PipelineSettings
from esbridge.engines.base import BulkAction, SearchResult
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.graph import GraphOptions
from esbridge.query.graph_reader import LinkReader
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher

INDEX = "graph-time"
# Lexical-only (no embedder): the search's time is its 1 s embedding and 2 x 1 s of retrieval.
QUICK = PipelineSettings(bm25_timeout_s=1.0, knn_timeout_s=1.0, embed_timeout_s=1.0)
SEARCH_TIME_MS = 3000


def _chunk(doc_id: str, body: str, links: list[str]) -> BulkAction:
    source = {"chunk_id": f"{doc_id}#0", "doc_id": doc_id, "chunk_index": 0, "title": doc_id, "body": body}
    return BulkAction("index", f"{doc_id}#0", {**source, "links": links})


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    IndexManager(engine, INDEX, IndexParameters(dimension=4)).create()
    docs = [
        _chunk("a", "solar panels on the roof, solar power", ["c", "far"]),
        _chunk("b", "solar panels in the field", ["c"]),
        _chunk("c", "solar inverter sizing", ["a", "b"]),
        _chunk("d", "a solar eclipse", []),
        _chunk("far", "wind turbines offshore", ["a"]),
    ]
    assert list(engine.bulk(INDEX, docs).failed) == []
    engine.refresh(INDEX)
    yield engine
    engine.close()


class HungLinks(AsyncEmbeddedEngine):
    """The embedded engine, except that the graph stage's link reads (which ask for ``link_weights``) hang, or
    fail with ``fail``."""

    def __init__(self, engine: EmbeddedEngine, fail: Exception | None = None) -> None:
        super().__init__(engine=engine)
        self.fail = fail

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "link_weights" in body.get("_source", []):
            if self.fail is not None:
                raise self.fail
            await asyncio.sleep(30)
        return await super().search(index, body)


def _failure(reason: str) -> errors.EngineError:
    return errors.EngineError(reason, url="embedded://test", operation="search", index=INDEX)


def _search(engine: AsyncEmbeddedEngine, mode: str, *, graph: bool) -> SearchResponse:
    pipeline = QUICK.model_copy(update={"graph": GraphSettings(mode=mode, keep_top=1)})  # type: ignore[arg-type]
    searcher = HybridSearcher(engine, INDEX, None, pipeline)
    return asyncio.run(searcher.search(SearchRequest(query="solar panels", top_n=5, graph=graph, explain=True)))


def _ranked(response: SearchResponse) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in response.results]


@pytest.mark.parametrize(("mode", "skipped"), [("expand", "graph expansion"), ("rescore", "graph re-scoring")])
def test_a_hung_link_read_leaves_the_answer_as_without_the_graph(
    engine: EmbeddedEngine, mode: str, skipped: str
) -> None:
    plain = _search(AsyncEmbeddedEngine(engine=engine), mode, graph=False)
    linked = _search(AsyncEmbeddedEngine(engine=engine), mode, graph=True)
    assert linked.warnings == plain.warnings and linked.details.timings_ms["graph"] > 0
    assert _ranked(linked) != _ranked(plain), "the graph changes this answer when its reads are answered"
    hung = _search(HungLinks(engine), mode, graph=True)
    assert hung.took_ms < SEARCH_TIME_MS + 1000  # the search's time, not the 30 s the read hangs
    assert _ranked(hung) == _ranked(plain)
    *rest, warning = hung.warnings
    assert rest == plain.warnings
    assert warning.startswith(f"{skipped} skipped: no answer within the ")
    assert warning.endswith("s left of the search's time")
    assert hung.details.timings_ms["graph"] >= 1000  # it waited for the time left, at least 3 s less retrieval


def test_lift_is_skipped_the_same_way(engine: EmbeddedEngine) -> None:
    plain = _search(AsyncEmbeddedEngine(engine=engine), "lift", graph=False)
    hung = _search(HungLinks(engine), "lift", graph=True)
    assert hung.took_ms < SEARCH_TIME_MS + 1000
    assert _ranked(hung) == _ranked(plain)
    assert hung.warnings[:-1] == plain.warnings and hung.warnings[-1].startswith("graph re-scoring skipped: no answer")


def test_with_no_time_left_no_link_read_is_sent(engine: EmbeddedEngine) -> None:
    # Were the reads sent, their failure would be the warning.
    reader = LinkReader(HungLinks(engine, fail=_failure("the read was sent")), INDEX)
    options = GraphOptions()

    async def run() -> tuple[str, ...]:
        expanded = await reader.expand({"a#0": 1.0}, {"a#0": "a"}, Filters(), options, timeout_s=0.0)
        relinked = await reader.rescore({"a#0": 1.0}, {"a#0": "a"}, options, timeout_s=-0.5)
        assert expanded.expansion.scores == {} and relinked.rescored is None
        return (*expanded.warnings, *relinked.warnings)

    assert asyncio.run(run()) == (
        "graph expansion skipped: no answer within the 0.00s left of the search's time",
        "graph re-scoring skipped: no answer within the 0.00s left of the search's time",
    )


def test_a_failed_link_read_has_its_warning_and_a_timing(engine: EmbeddedEngine) -> None:
    plain = _search(AsyncEmbeddedEngine(engine=engine), "expand", graph=False)
    response = _search(HungLinks(engine, fail=_failure("shard gone")), "expand", graph=True)
    assert response.warnings == [*plain.warnings, f"graph expansion skipped: {_failure('shard gone')}"]
    assert _ranked(response) == _ranked(plain)
    assert "graph" in response.details.timings_ms


class Constant:
    """A re-ranker that scores every text alike, at once."""

    name = "constant"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [1.0] * len(texts)


def test_the_time_its_caller_gives_bounds_the_graph_and_leaves_the_re_ranking_out(engine: EmbeddedEngine) -> None:
    """A sidecar gives the search what is left of its request's time: a hung link read ends by it, not by the
    search's own time (3 s, and 15 s more for the re-ranker), and the re-ranking, with no time left, is skipped."""
    pipeline = QUICK.model_copy(update={"graph": GraphSettings(mode="expand")})
    searcher = HybridSearcher(HungLinks(engine), INDEX, None, pipeline, reranker=Constant())
    request = SearchRequest(query="solar panels", top_n=5, graph=True)
    response = asyncio.run(searcher.search(request, time_s=0.5))
    assert response.took_ms < 1500
    assert [hit.id for hit in response.results]
    *_, graph, rerank = response.warnings
    assert graph.startswith("graph expansion skipped: no answer within the 0.")
    assert rerank == "re-ranking was not applied, the fused order is kept: none of the search's time was left"
    assert "rerank" not in response.details.timings_ms
