"""``esbridge.query.api.searcher``, the async Python API, keeps the caller's event loop running while it builds
the searcher: a re-ranker's model loads, and a cluster's kind is asked for, in a worker thread."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TypeVar

import pytest

from esbridge.config import load_settings
from esbridge.config.pipeline import RerankSettings
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.query.api import searcher
from esbridge.query.models import SearchRequest
from esbridge.query.rerank import RERANKERS, Reranker
from tests.contract.records import CHUNKS, PARAMS
from tests.support.loopback import listening

# What a model takes to load, or a server to answer: long enough that a loop stalled by it is told apart from one
# slowed by a busy machine (stalls of over 0.3 s were seen at load 8 on two cores).
LOADING_S = 1.2
T = TypeVar("T")


class SlowToLoad:
    """A re-ranker whose model takes ``LOADING_S`` to load, as a cross-encoder's takes seconds."""

    name = "slow-to-load"

    def __init__(self, settings: RerankSettings) -> None:
        time.sleep(LOADING_S)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.0 for _ in texts]


async def longest_stall_s(work: Awaitable[T]) -> tuple[float, T]:
    """The longest the event loop stood still while ``work`` ran, and what it returned."""
    stalls = [0.0]
    stop = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            stalls.append(now - last - 0.01)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    try:
        result = await work
    finally:
        stop.set()
        await ticker
    return max(stalls), result


@pytest.fixture
def written(tmp_path: Path) -> Path:
    engine = EmbeddedEngine(tmp_path)
    try:
        IndexManager(engine, "notes", PARAMS).create()
        assert not engine.bulk("notes", [BulkAction("index", key, chunk) for key, chunk in CHUNKS.items()]).failed
    finally:
        engine.close()
    return tmp_path


def test_a_re_ranker_loads_without_stopping_the_event_loop(written: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(settings: RerankSettings) -> Reranker:
        return SlowToLoad(settings)

    monkeypatch.setitem(RERANKERS, "slow-to-load", slow)
    settings = load_settings(
        index="notes", data_dir=written, pipeline={"rerank": {"enabled": True, "name": "slow-to-load"}}
    )

    async def search_once() -> list[str]:
        async with searcher(settings, None) as hybrid:
            return [hit.doc_id for hit in (await hybrid.search(SearchRequest(query="telescope lenses"))).results]

    stall, found = asyncio.run(longest_stall_s(search_once()))
    assert found  # the searcher searched, re-ranking included
    assert stall < LOADING_S / 2


class SlowRoot(BaseHTTPRequestHandler):
    """``GET /`` of an OpenSearch that takes ``LOADING_S`` to answer; nothing else is asked of it here."""

    def do_GET(self) -> None:
        time.sleep(LOADING_S)
        body = json.dumps({"version": {"number": "2.19.0", "distribution": "opensearch"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def slow_root() -> Iterator[str]:
    with listening(SlowRoot) as url:
        yield url


def test_asking_a_cluster_which_engine_it_is_does_not_stop_the_event_loop(slow_root: str) -> None:
    async def build() -> str:
        async with searcher(load_settings(url=slow_root, index="notes", retries=0), None) as hybrid:
            return hybrid.index

    stall, index = asyncio.run(longest_stall_s(build()))
    assert index == "notes"
    assert stall < LOADING_S / 2
