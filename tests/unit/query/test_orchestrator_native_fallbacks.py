"""The native path of the orchestrator when it fails or is refused, against in-memory engines: falling back to
client-side fusion, what it remembers of a refusal, and a native answer set aside.

Native fusion is emulated (tests/support/native_emulation.py) from the engines' own code and docs.
"""

from __future__ import annotations

import pytest

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.capabilities import Capabilities
from esbridge.query.orchestrator import HybridSearcher
from tests.support.memory_engine import NOW, MemoryEngine, StubEmbedder
from tests.support.native_emulation import EmulatedNativeEngine
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


def test_a_failed_native_request_falls_back_to_client_side_fusion() -> None:
    failure = errors.AuthorizationError(
        "current license is non-compliant for [Reciprocal Rank Fusion (RRF)]", url="memory://", operation="search"
    )
    engine = EmulatedNativeEngine(MemoryEngine(LEX, SEM), fail_native=failure)
    searcher, _ = native_searcher(opensearch(), engine)
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert response.details.native is not None and response.details.native.used is False
    assert any("native hybrid failed" in w and "non-compliant" in w for w in response.warnings)
    assert [hit.id for hit in response.results] == [hit.id for hit in run(searcher, mode="client").results]


def test_an_unreachable_probe_means_client_side() -> None:
    searcher, _ = native_searcher("connection refused")
    response = run(searcher)
    assert response.search_mode == "hybrid"
    assert "could not be probed" in str(response.details.native and response.details.native.reason)


@pytest.mark.parametrize(
    ("failure", "probes"),
    [
        (errors.AuthorizationError("no cluster:monitor privilege", url="memory://", operation="probe", status=403), 1),
        (errors.EngineUnavailable("connection refused", url="memory://", operation="probe"), 3),
        (errors.EngineResponseError("bad gateway", url="memory://", operation="probe", status=502), 3),
    ],
)
def test_a_probe_refused_for_good_is_not_sent_again_with_every_search(failure: errors.EngineError, probes: int) -> None:
    """A search-only user may not read cluster health or node info: asking again on every search adds a
    request (and a denied-access audit event) to each one. A probe that met an unreachable engine is tried again."""
    calls = []

    async def probe(ends: float) -> Capabilities:
        calls.append(1)
        raise failure

    settings = PipelineSettings.model_validate(
        {"fusion": "linear", "recency": {"enabled": False}, "cache": {"results": 0}}
    )
    searcher = HybridSearcher(MemoryEngine(LEX, SEM), "idx", StubEmbedder(), settings, clock=lambda: NOW, probe=probe)
    for _ in range(3):
        response = run(searcher)
        assert response.search_mode == "hybrid"
        assert "could not be probed" in str(response.details.native and response.details.native.reason)
    assert len(calls) == probes


def test_a_licence_refusal_of_native_hybrid_is_not_asked_again_with_every_search() -> None:
    """A trial licence that expires under a running service: the engine refuses the rrf/linear retrievers from
    then on, and sending each search there first would cost every one a refused round trip and a warning."""
    refusal = errors.UnsupportedFeature(
        "security_exception: current license is non-compliant for [linear retriever]",
        url="memory://",
        operation="search",
        status=403,
    )
    engine = EmulatedNativeEngine(ElasticsearchMemory(LEX, SEM), fail_native=refusal)
    searcher, _ = native_searcher(elasticsearch(), engine)
    first = run(searcher)
    assert any("native hybrid failed" in w and "non-compliant" in w for w in first.warnings)
    later = run(searcher)
    assert len(engine.native_bodies) == 1
    assert later.search_mode == "hybrid" and later.warnings == []
    assert later.details.native is not None and "non-compliant" in str(later.details.native.reason)
    forced = run(searcher, mode="native")
    assert any("native hybrid is not available" in w and "non-compliant" in w for w in forced.warnings)
    assert len(engine.native_bodies) == 1


def unknown(what: str) -> errors.RequestRejected:
    return errors.RequestRejected(f"parsing_exception: unknown {what}", url="memory://", operation="search", status=400)


def test_a_native_request_the_engine_does_not_know_is_sent_once_per_form() -> None:
    """An engine without what the request needs (a retriever, a query type, a processor) refuses it every time."""
    engine = EmulatedNativeEngine(MemoryEngine(LEX, SEM), fail_native=unknown("query [hybrid]"))
    searcher, _ = native_searcher(opensearch(), engine)
    first = run(searcher)
    assert any(w.startswith("native hybrid failed (") for w in first.warnings), first.warnings
    assert first.details.native is not None and "unknown query [hybrid]" in str(first.details.native.reason)
    later = run(searcher)
    assert len(engine.native_bodies) == 1
    assert later.search_mode == "hybrid" and later.warnings == []
    assert later.details.native is not None and later.details.native.used is False
    assert str(later.details.native.reason).startswith("the engine refused this native hybrid request before: ")
    assert ranked(later) == ranked(first)
    forced = run(searcher, mode="native")
    assert any("native hybrid is not available" in w and "unknown query" in w for w in forced.warnings)
    assert len(engine.native_bodies) == 1
    run(searcher, weights={"bm25": 1.0, "knn": 3.0})  # weighted: another request, which may be accepted
    run(searcher, explain=True)  # with the engine's explanation: another request too
    assert len(engine.native_bodies) == 3


def test_a_refusal_of_the_query_itself_does_not_turn_native_hybrid_off() -> None:
    """The engine refused the native request, and the same search's BM25 request failed too: nothing says the
    native form is what it lacks, and the next search still goes native."""
    inner = MemoryEngine(LEX, SEM, fail=["bm25"])
    engine = EmulatedNativeEngine(inner, fail_native=unknown("field [x]"))
    searcher, _ = native_searcher(opensearch(), engine)
    assert run(searcher).search_mode == "semantic-only"
    engine.fail_native, inner.fail = None, set()
    assert run(searcher).search_mode == "native-hybrid"
    assert len(engine.native_bodies) == 2


@pytest.mark.parametrize("fusion", ["linear", "rrf"])
def test_a_native_answer_ranked_only_by_a_retriever_weighted_0_is_fused_by_esbridge(fusion: str) -> None:
    """`--weights knn=0` and BM25 finds nothing: the engine scores every hit 0, ties in no order; esbridge fuses the
    same search, in kNN's order, and says so, as it does without native hybrid."""
    ranked = [("c#0", 9.0), ("a#0", 7.0), ("b#0", 3.0)]
    searcher, engine = native_searcher(opensearch(), MemoryEngine([], ranked), fusion=fusion)
    response = run(searcher, weights={"knn": 0.0})
    assert len(engine.native_bodies) == 1, "the engine was asked, and its answer set aside"
    assert [hit.id for hit in response.results] == ["c#0", "a#0", "b#0"]
    assert response.search_mode == "hybrid"
    assert "bm25 gave no results, so these are ranked by knn alone, though the weights give it 0" in response.warnings
    assert response.details.native is not None and response.details.native.used is False
    assert "every fused score was 0" in str(response.details.native.reason)
    healthy, _ = native_searcher(opensearch(), MemoryEngine(LEX, SEM), fusion=fusion)
    assert run(healthy, weights={"knn": 0.0}).search_mode == "native-hybrid"


@pytest.mark.parametrize("mode", ["native", "auto", "client"])
def test_a_floor_without_min_max_is_refused_on_every_path(mode: str) -> None:
    """The client-side linear fusion refuses min_max_floor with another normalization; the engine's must not
    run that configuration instead, so that one setting does not answer on one engine and fail on another."""
    params = {"normalization": "l2", "min_max_floor": 0.001}
    searcher, engine = native_searcher(opensearch(), fusion="linear", fusion_params=params)
    with pytest.raises(errors.ConfigError, match="min_max normalization only"):
        run(searcher, mode=mode)
    assert engine.native_bodies == []
