"""Rate limits and the concurrency gate: beyond them 429 with Retry-After at once; health stays answerable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import httpx
import pytest

from esbridge.service import app as app_module
from esbridge.service.app import create_app
from esbridge.service.limits import ConcurrencyGate, TokenBuckets, refill
from tests.support.hashing import HashingEmbedder
from tests.support.serving import uvicorn_thread
from tests.unit.service.conftest import KEY, OTHER_KEY, RECORDS, ClientFactory, service_settings


class SlowEmbedder(HashingEmbedder):
    """Embedding takes ``delay_s`` (only for texts with ``trigger``, if given): a search holds its slot that long."""

    def __init__(self, delay_s: float, trigger: str = "") -> None:
        self.delay_s, self.trigger = delay_s, trigger

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(self.trigger in text for text in texts):
            time.sleep(self.delay_s)
        return super().embed(texts)


def test_refill_adds_rate_times_elapsed_up_to_the_burst() -> None:
    assert refill(0.5, 2.0, 0.25, 2) == 1.0
    assert refill(1.5, 10.0, 1.0, 2) == 2.0
    assert refill(1.0, -3.0, 1.0, 2) == 1.0  # a clock that went back adds nothing


def test_token_buckets_let_a_burst_through_then_say_how_long_to_wait() -> None:
    now = [0.0]
    buckets = TokenBuckets(rate=2.0, burst=3, clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == 0.5
    assert buckets.take("b") == 0.0  # each caller has its own bucket
    now[0] = 0.25
    assert buckets.take("a") == 0.25  # half a token by now
    now[0] = 0.5
    assert buckets.take("a") == 0.0


def test_token_buckets_forget_the_least_recent_caller_beyond_their_bound() -> None:
    buckets = TokenBuckets(rate=1.0, burst=1, max_callers=2, clock=lambda: 0.0)
    assert [buckets.take(caller) for caller in ("a", "b", "c")] == [0.0, 0.0, 0.0]
    assert buckets.take("c") == 1.0
    assert buckets.take("a") == 0.0  # forgotten, so full again
    assert TokenBuckets(rate=0, burst=1).take("a") == 0.0  # a rate of 0 turns limits off


def test_the_gate_admits_queues_and_refuses_in_order() -> None:
    async def scenario() -> list[Any]:
        gate = ConcurrencyGate(limit=1, queue=1)
        assert await gate.acquire(1.0) is None
        queued = asyncio.ensure_future(gate.acquire(5.0))
        await asyncio.sleep(0)
        full = await gate.acquire(5.0)
        waiting = gate.waiting
        gate.release()  # hands the slot to the queued request
        handed = await queued
        timed_out = await gate.acquire(0.05)
        gate.release()
        return [full, waiting, handed, timed_out, gate.active, gate.waiting]

    assert asyncio.run(scenario()) == ["queue_full", 1, None, "queue_timeout", 0, 0]


def test_the_gate_refuses_at_once_a_wait_it_expects_to_outlast_the_timeout() -> None:
    async def scenario() -> list[Any]:
        gate = ConcurrencyGate(limit=2, queue=10, smoothing=0.5)
        gate.observe(0.4)
        gate.observe(0.2)  # 0.4 + 0.5 * (0.2 - 0.4)
        assert await gate.acquire(1.0) is None and await gate.acquire(1.0) is None
        waits = [gate.expected_wait_s(place) for place in (1, 2, 3)]
        queued = [asyncio.ensure_future(gate.acquire(0.35)) for _ in range(3)]
        await asyncio.sleep(0)
        refused = queued[2].result()  # its wait, 0.45 s, is beyond 0.35 s: refused without waiting
        gate.release()
        gate.release()
        return [*waits, refused, await queued[0], await queued[1]]

    assert asyncio.run(scenario()) == pytest.approx([0.15, 0.3, 0.45, "expected_wait", None, None])


def test_a_waiter_cancelled_as_its_slot_arrives_passes_the_slot_on() -> None:
    async def scenario() -> tuple[int, int]:
        gate = ConcurrencyGate(limit=1, queue=2)
        await gate.acquire(1.0)
        first = asyncio.ensure_future(gate.acquire(5.0))
        second = asyncio.ensure_future(gate.acquire(5.0))
        await asyncio.sleep(0)
        gate.release()  # the slot goes to `first` ...
        first.cancel()  # ... which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await second is None
        gate.release()
        return gate.active, gate.waiting

    assert asyncio.run(scenario()) == (0, 0)


def test_a_key_over_its_rate_gets_429_with_retry_after(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The buckets' clock stands still: the two writes refill nothing however long they take. With the real clock, a
    # loaded machine that spent a second on them had refilled half a token, and the wait was rightly 1 s, not 2.
    monkeypatch.setattr(app_module, "TokenBuckets", partial(TokenBuckets, clock=lambda: 0.0))
    client = make_client(api_keys=[KEY, OTHER_KEY], rate_limit_per_s=0.5, rate_limit_burst=2)
    bodies = [{"documents": [record]} for record in RECORDS]
    answers = [client.post("/v1/documents", json=body, headers={"X-API-Key": KEY}) for body in bodies]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[2].headers["Retry-After"] == "2"
    assert answers[2].json()["error"]["kind"] == "rate_limited"
    assert answers[2].json()["error"]["message"] == ("too many requests for this API key (or client); retry after 2 s")
    assert client.post("/v1/documents", json=bodies[2], headers={"X-API-Key": OTHER_KEY}).status_code == 200
    for route in ("/healthz", "/readyz", "/metrics"):
        assert client.get(route).status_code == 200, route  # outside /v1: never limited
    metrics = client.get("/metrics").text
    assert 'esbridge_rejections_total{reason="rate_limited"} 1.0' in metrics


def test_beyond_the_queue_the_service_answers_429_at_once_and_health_stays_up() -> None:
    settings = service_settings(api_keys=[KEY], max_concurrency=1, max_queue=1, queue_timeout_s=10, rate_limit_per_s=0)
    app = create_app(settings, embedder=SlowEmbedder(0.4), load_model=False)
    with uvicorn_thread(app) as (_, base):
        written = httpx.post(f"{base}/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
        assert written.status_code == 200

        async def burst() -> tuple[list[tuple[int, float, str | None]], float]:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:

                async def one(query: str) -> tuple[int, float, str | None]:
                    began = time.perf_counter()
                    answer = await http.post("/v1/search", json={"query": query})
                    return answer.status_code, time.perf_counter() - began, answer.headers.get("Retry-After")

                searches = [asyncio.ensure_future(one(f"solar panels {n}")) for n in range(6)]
                await asyncio.sleep(0.15)
                began = time.perf_counter()
                assert (await http.get("/healthz")).status_code == 200
                health_s = time.perf_counter() - began
                return list(await asyncio.gather(*searches)), health_s

        answers, health_s = asyncio.run(burst())
        metrics = httpx.get(f"{base}/metrics").text
    ok = [answer for answer in answers if answer[0] == 200]
    refused = [answer for answer in answers if answer[0] == 429]
    assert len(ok) == 2 and len(refused) == 4  # one running, one queued
    assert all(seconds < 0.3 for _, seconds, _ in refused)  # refused at once, not after a wait
    # Retry-After: the wait expected for the next place in the queue (about 2 x 0.5 s), in whole seconds
    assert {retry for _, _, retry in refused} <= {"1", "2"}
    assert health_s < 0.3
    assert 'esbridge_rejections_total{reason="queue_full"} 4.0' in metrics
    assert "esbridge_queue_depth 0.0" in metrics


async def holding_a_slot(http: httpx.AsyncClient, count: int, within_s: float = 10.0) -> None:
    """Wait until ``count`` requests hold a slot (a fixed sleep is not enough on a loaded machine)."""
    deadline = time.perf_counter() + within_s
    while f"esbridge_requests_in_flight {float(count)}" not in (await http.get("/metrics")).text:
        assert time.perf_counter() < deadline, f"{count} request(s) never held a slot"
        await asyncio.sleep(0.01)


def test_a_request_that_waits_too_long_for_a_slot_gets_429(make_client: ClientFactory) -> None:
    settings = service_settings(api_keys=[KEY], max_concurrency=1, max_queue=4, queue_timeout_s=0.1)
    # The records are written through another app, slowly as on a loaded machine: the gate of the app under test
    # has then seen no request end, so no mean time a slot is held predicts a wait, the second search waits its
    # 0.1 s, and the Retry-After it is told is the least, 1 s, whatever the machine's load made the write take.
    writer = make_client(settings, embedder=SlowEmbedder(1.2))
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).is_success
    app = create_app(settings, embedder=SlowEmbedder(1.5, trigger="zephyr"), load_model=False)
    with uvicorn_thread(app) as (_, base):

        async def pair() -> list[int]:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                first = asyncio.ensure_future(http.post("/v1/search", json={"query": "zephyr wind farms"}))
                await holding_a_slot(http, 1)
                second = await http.post("/v1/search", json={"query": "sourdough"})
                assert second.json()["error"]["message"] == (
                    "the service is at capacity: no slot within 0.1 s; retry after 1 s"
                )
                assert second.headers["Retry-After"] == "1"
                return [(await first).status_code, second.status_code]

        assert asyncio.run(pair()) == [200, 429]


@pytest.mark.parametrize("header", ["X-API-Key", "Authorization"])
def test_a_key_over_its_rate_cannot_go_on_by_sending_a_second_key_header(
    make_client: ClientFactory, header: str
) -> None:
    client = make_client(api_keys=[KEY], rate_limit_per_s=0.001, rate_limit_burst=1)
    given = KEY if header == "X-API-Key" else f"Bearer {KEY}"
    body = {"documents": [RECORDS[0]]}
    assert client.post("/v1/documents", json=body, headers={header: given}).status_code == 200
    # The route authenticates with the first of the headers: the rate limit must count against that key too.
    answer = client.post("/v1/documents", json=body, headers=[(header, given), (header, "not-a-key")])
    assert (answer.status_code, answer.json()["error"]["kind"]) == (429, "rate_limited")
