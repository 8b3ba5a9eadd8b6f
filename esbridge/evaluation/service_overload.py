"""The sidecar beyond its sustainable rate, and its writes: the open-loop half of the load test.

``esbridge.evaluation.service_load`` runs these after its closed-loop run (``--overload``, ``--writes``):
searches sent on schedule at a multiple of the measured throughput, whatever the answers, with
``/healthz``, memory, CPU and the server's own metrics watched; and upsert / search / delete rounds
timed under the server's refresh policy.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import Counter
from typing import Any

import httpx
import psutil

from esbridge.evaluation.service_load import percentile, resident_bytes


def latency_summary(latencies_ms: list[float]) -> dict[str, float | None]:
    ordered = sorted(latencies_ms)
    if not ordered:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(statistics.median(ordered), 2), "p99": percentile(ordered, 0.99), "max": round(ordered[-1], 2)}


async def run_overload(
    base: str,
    queries: list[str],
    *,
    rate: float,
    seconds: float,
    top_n: int,
    keys: list[str] | None = None,
    memory: psutil.Process | None = None,
    timeout_s: float = 10.0,
) -> dict[str, Any]:
    """Open-loop searches at ``rate`` per second for ``seconds``, sent on schedule whatever the answers; every
    query text distinct (give queries the server has not embedded yet).

    Sent with aiohttp, whose client costs a fraction of httpx's CPU per request: at these rates on 2 cores
    an httpx client is the bottleneck, and its requests time out before they reach the server."""
    import aiohttp

    statuses: Counter[str] = Counter()
    latencies: dict[str, list[float]] = {"200": [], "429": []}
    retry_after: Counter[str] = Counter()
    health: list[float] = []
    health_statuses: Counter[str] = Counter()
    rss_samples: list[float] = []
    done = asyncio.Event()
    limit = aiohttp.ClientTimeout(total=timeout_s)

    async def one(http: aiohttp.ClientSession, number: int) -> None:
        headers = {"X-API-Key": keys[number % len(keys)]} if keys else {}
        began = time.perf_counter()
        body = {"query": distinct(queries, number), "top_n": top_n}
        try:
            async with http.post(f"{base}/v1/search", json=body, headers=headers, timeout=limit) as answer:
                await answer.read()
        except asyncio.TimeoutError:
            statuses["timeout"] += 1
            return
        except aiohttp.ClientError as exc:
            statuses[type(exc).__name__] += 1
            return
        status = str(answer.status)
        statuses[status] += 1
        latencies.setdefault(status, []).append((time.perf_counter() - began) * 1000)
        if status == "429":
            retry_after[answer.headers.get("Retry-After", "missing")] += 1

    async def watch(http: aiohttp.ClientSession) -> None:
        while not done.is_set():
            began = time.perf_counter()
            try:
                async with http.get(f"{base}/healthz", timeout=limit) as answer:
                    await answer.read()
                health_statuses[str(answer.status)] += 1
            except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                health_statuses[type(exc).__name__] += 1
            health.append((time.perf_counter() - began) * 1000)
            if memory is not None and len(health) % 5 == 0:
                rss_samples.append(round(resident_bytes(memory) / 2**20, 1))
            await asyncio.sleep(0.2)

    async def scrape(http: aiohttp.ClientSession) -> str:
        async with http.get(f"{base}/metrics") as answer:
            return await answer.text()

    connector = aiohttp.TCPConnector(limit=1024)
    async with aiohttp.ClientSession(connector=connector) as http, aiohttp.ClientSession() as probe:
        before = await scrape(probe)
        cpu_before = time.process_time()
        server_cpu_before = sum(memory.cpu_times()[:2]) if memory is not None else 0.0
        watcher = asyncio.ensure_future(watch(probe))
        started = time.perf_counter()
        pending: set[asyncio.Task[None]] = set()
        sent = 0
        while sent < rate * seconds:
            delay = started + sent / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.ensure_future(one(http, sent))
            pending.add(task)
            task.add_done_callback(pending.discard)
            sent += 1
        sending_s = time.perf_counter() - started
        await asyncio.gather(*pending)
        done.set()
        await watcher
        after = await scrape(probe)
        client_cpu_s = time.process_time() - cpu_before
        server_cpu_s = sum(memory.cpu_times()[:2]) - server_cpu_before if memory is not None else None
    return {
        "rate_rps": round(rate, 1),
        "sent": sent,
        "sending_seconds": round(sending_s, 2),
        "client_cpu_seconds": round(client_cpu_s, 2),
        "server_cpu_seconds": round(server_cpu_s, 2) if server_cpu_s is not None else None,
        "statuses": dict(statuses),
        "latency_ms_200": latency_summary(latencies["200"]),
        "latency_ms_429": latency_summary(latencies["429"]),
        "retry_after": dict(retry_after),
        "healthz": {"statuses": dict(health_statuses), **latency_summary(health)},
        "rss_mb_every_second": rss_samples,
        "server_ms": {
            "200": server_latency(before, after, "/v1/search", "200"),
            "429": server_latency(before, after, "unmatched", "429"),  # refused before routing
        },
        "rejections": counter_delta(before, after, "esbridge_rejections_total", "reason"),
    }


def counter_delta(before: str, after: str, name: str, label: str) -> dict[str, int]:
    """How much counter ``name`` grew between two scrapes, by the value of ``label``."""

    def values(text: str) -> dict[str, float]:
        return {sample.labels[label]: sample.value for sample in _samples(text, name) if sample.name == name}

    start = values(before)
    return {key: int(value - start.get(key, 0.0)) for key, value in sorted(values(after).items())}


def _samples(text: str, family_name: str) -> list[Any]:
    from prometheus_client.parser import text_string_to_metric_families

    prefix = family_name.removesuffix("_total")
    return [
        sample for family in text_string_to_metric_families(text) if family.name == prefix for sample in family.samples
    ]


def distinct(queries: list[str], number: int) -> str:
    """The ``number``-th query text, made distinct when the list repeats, so its embedding is never cached."""
    rounds, at = divmod(number, len(queries))
    return queries[at] if rounds == 0 else f"{queries[at]} {rounds}"


def server_latency(before: str, after: str, route: str, status: str) -> dict[str, float | int | None]:
    """Count, p50 and p99 (bucket upper bounds, ms) of the server's own latency for ``route`` answered with
    ``status`` between two scrapes of its /metrics: the time inside the server, without the client's."""

    def buckets(text: str) -> dict[float, float]:
        found: dict[float, float] = {}
        for sample in _samples(text, "esbridge_http_request_duration_seconds"):
            labels = sample.labels
            if sample.name.endswith("_bucket") and labels.get("route") == route and labels["status"] == status:
                found[float(labels["le"])] = sample.value
        return found

    start, end = buckets(before), buckets(after)
    counts = sorted((bound, end[bound] - start.get(bound, 0.0)) for bound in end)
    total = counts[-1][1] if counts else 0

    def quantile(fraction: float) -> float | None:
        bound = next((bound for bound, count in counts if total and count >= fraction * total), None)
        return None if bound is None else round(bound * 1000, 1)

    return {"count": int(total), "p50_at_most": quantile(0.5), "p99_at_most": quantile(0.99)}


async def run_writes(base: str, count: int, key: str) -> dict[str, Any]:
    """``count`` upsert / search / delete rounds of one document: latencies, how many the next search saw,
    and how many deletes did not find the document just written (possible with ``service.refresh = false``;
    those are deleted again at the end, after a refresh interval)."""
    upserts: list[float] = []
    deletes: list[float] = []
    seen = 0
    missed: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=60, headers={"X-API-Key": key}) as http:
        for number in range(count):
            doc_id = f"service-load-write-{number}"
            text = f"Probe {number}: a kelp forest off a cold coast stores carbon ({os.urandom(4).hex()})."
            began = time.perf_counter()
            written = await http.post("/v1/documents", json={"documents": [{"id": doc_id, "text": text}]})
            upserts.append((time.perf_counter() - began) * 1000)
            written.raise_for_status()
            found = await http.post("/v1/search", json={"query": text, "top_n": 3})
            seen += doc_id in [hit["doc_id"] for hit in found.json().get("results", [])]
            began = time.perf_counter()
            deleted = await http.delete(f"/v1/documents/{doc_id}")
            deletes.append((time.perf_counter() - began) * 1000)
            if deleted.status_code == 404:
                missed.append(doc_id)
            else:
                deleted.raise_for_status()
        if missed:
            await asyncio.sleep(2)
            for doc_id in missed:
                (await http.delete(f"/v1/documents/{doc_id}")).raise_for_status()
    return {
        "count": count,
        "upsert_ms": latency_summary(upserts),
        "delete_ms": latency_summary(deletes),
        "seen_by_next_search": seen,
        "deletes_not_finding_it": len(missed),
    }


def overload_verdict(
    report: dict[str, Any], *, max_tail_ratio: float = 10.0, max_rss_growth_pct: float = 10.0
) -> list[str]:
    """What an overload run got wrong against the goals (empty: it met them all)."""
    problems = []
    other = {status: n for status, n in report["statuses"].items() if status not in ("200", "429")}
    if other:
        problems.append(f"answers other than 200 or 429: {other}")
    p50, p99 = report["latency_ms_200"]["p50"], report["latency_ms_200"]["p99"]
    if not p50 or p99 / p50 >= max_tail_ratio:
        problems.append(f"p99 of the 200s is not under {max_tail_ratio:g} x their p50: {p99} / {p50} ms")
    if set(report["healthz"]["statuses"]) != {"200"}:
        problems.append(f"/healthz answered {report['healthz']['statuses']}")
    rss = report["rss_mb_every_second"]
    if len(rss) >= 2 and (rss[-1] - rss[0]) / rss[0] * 100 > max_rss_growth_pct:
        problems.append(f"resident memory grew from {rss[0]} to {rss[-1]} MB")
    return problems
