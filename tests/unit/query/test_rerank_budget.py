"""A re-ranker slower than ``pipeline.rerank.timeout_s`` leaves the fused order, and later searches unharmed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.errors import ConfigError
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.rerank_budget import LATE_LIMIT
from tests.support.memory_engine import LEX, SEM, MemoryEngine, StubEmbedder

BUDGET_S = 0.3
OVER_BUDGET = "re-ranking was not applied, the fused order is kept: it took longer than its budget of 0.3 s"


class Gated:
    """Scores by text length, reversing the fused order; a call waits for ``gate`` first when ``hold`` says so."""

    name = "gated"

    def __init__(self, *, hold: int = 0) -> None:
        self.gate = threading.Event()
        self.hold = hold
        """how many of the first calls wait for the gate"""
        self.calls = 0
        self.ended = 0
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        with self._lock:
            self.calls += 1
            held = self.calls <= self.hold
        if held:
            self.gate.wait(timeout=30)
        with self._lock:
            self.ended += 1
        return [-float(position) for position in range(len(texts))][::-1]


class Sleeping:
    name = "sleeping"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        time.sleep(3)
        return [1.0] * len(texts)


def searcher_with(reranker: object | None) -> HybridSearcher:
    pipeline = PipelineSettings.model_validate(
        {"recency": {"enabled": False}, "cache": {"results": 0}, "rerank": {"timeout_s": BUDGET_S, "weight": 1.0}}
    )
    return HybridSearcher(MemoryEngine(LEX, SEM), "idx", StubEmbedder(), pipeline, reranker=reranker)  # type: ignore[arg-type]


def order(response: SearchResponse) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in response.results]


def search(hybrid: HybridSearcher) -> tuple[SearchResponse, float]:
    started = time.perf_counter()
    response = asyncio.run(hybrid.search(SearchRequest(query="solar energy", explain=True)))
    return response, time.perf_counter() - started


def test_a_re_ranker_past_its_budget_leaves_the_fused_order_with_a_warning_naming_the_budget() -> None:
    fused, _ = search(searcher_with(None))
    response, took = search(searcher_with(Sleeping()))
    assert took < 2.0, "the search waited for the re-ranker instead of its budget"
    assert order(response) == order(fused)
    assert [w for w in response.warnings if w.startswith("re-ranking")] == [
        f"{OVER_BUDGET} (pipeline.rerank.timeout_s)"
    ]
    assert all(hit.explain is not None and hit.explain.rerank_score is None for hit in response.results)
    assert "rerank" not in response.details.timings_ms
    assert response.search_mode == "hybrid"


def test_a_re_ranking_left_running_does_not_change_later_searches() -> None:
    reranker = Gated(hold=1)
    hybrid = searcher_with(reranker)
    fused, _ = search(searcher_with(None))
    late, _ = search(hybrid)
    assert order(late) == order(fused)
    assert any(w.startswith(OVER_BUDGET) for w in late.warnings), late.warnings

    reranked, _ = search(hybrid)  # while the first call still runs
    assert [w for w in reranked.warnings if w.startswith("re-ranking")] == []
    assert [hit.id for hit in reranked.results] == [hit.id for hit in fused.results][::-1]
    assert all(hit.explain is not None and hit.explain.rerank_score is not None for hit in reranked.results)

    reranker.gate.set()  # the first call ends now; its answer goes nowhere
    deadline = time.monotonic() + 5
    while hybrid._rerank_threads.late and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hybrid._rerank_threads.late == 0
    again, _ = search(hybrid)
    assert order(again) == order(reranked)
    assert reranker.ended == reranker.calls == 3


def test_while_too_many_re_rankings_run_past_their_budget_a_search_skips_re_ranking_at_once() -> None:
    reranker = Gated(hold=LATE_LIMIT)
    hybrid = searcher_with(reranker)
    for _ in range(LATE_LIMIT):
        search(hybrid)
    skipped, took = search(hybrid)
    assert took < BUDGET_S, "it waited for a re-ranker that could not start"
    assert reranker.calls == LATE_LIMIT, "no thread was added to those still running"
    assert [w for w in skipped.warnings if w.startswith("re-ranking")] == [
        f"re-ranking was not applied, the fused order is kept: {LATE_LIMIT} earlier re-ranking(s) that took longer "
        "than the budget of 0.3 s (pipeline.rerank.timeout_s) are still running"
    ]
    reranker.gate.set()
    deadline = time.monotonic() + 5
    while hybrid._rerank_threads.late and time.monotonic() < deadline:
        time.sleep(0.01)
    recovered, _ = search(hybrid)
    assert not [w for w in recovered.warnings if w.startswith("re-ranking")], recovered.warnings


def test_a_failure_within_the_budget_is_still_reported_as_a_failure() -> None:
    class Raising:
        name = "raising"

        def score(self, query: str, texts: Sequence[str]) -> list[float]:
            raise RuntimeError("CUDA out of memory")

    response, _ = search(searcher_with(Raising()))
    assert [w for w in response.warnings if w.startswith("re-ranking")] == [
        "re-ranking failed, the fused order is kept: re-ranker 'raising': RuntimeError: CUDA out of memory"
    ]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_budget_that_is_not_a_positive_number_is_refused_naming_the_setting(tmp_path: Path, value: str) -> None:
    path = tmp_path / "rerank.toml"
    path.write_text(f"[pipeline.rerank]\ntimeout_s = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pipeline\.rerank\.timeout_s: "):
        load_settings(path)


def test_the_default_budget() -> None:
    assert PipelineSettings().rerank.timeout_s == 15.0
