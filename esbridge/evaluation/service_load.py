"""Sustained concurrent searches against the HTTP sidecar, on loopback, bounded in requests and seconds.

    python -m esbridge.evaluation.service_load --url URL --index INDEX --queries DATASET \\
        [--requests 1000] [--seconds 120] [--concurrency 8] [--warmup 50] [--keys 0] \\
        [--overload 4 --overload-seconds 20] [--writes 0]

Starts ``esbridge serve`` as its own process on 127.0.0.1 (a free port), backed by the engine at
``--url``, waits until ``/readyz`` answers, sends ``--warmup`` searches that are not counted, reads
the server's resident memory, then runs ``--concurrency`` clients that send searches until
``--requests`` were sent or ``--seconds`` passed, and reads the memory again. Every measured query
is a distinct query text of the dataset (used in order, repeated only when there are fewer queries
than requests), and the service's in-memory result and embedding caches are off, so each request
runs the whole pipeline and embeds its query (a repeated text is found in the on-disk embedding
cache, which starts empty). Prints throughput, latency percentiles, errors by status, the
``search_mode`` counts and resident memory before, during (every tenth of the requests) and after, as JSON.

With ``--keys N`` the server accepts N generated API keys and the clients use them in turn (a service
with N tenants, each with its own rate limit). With ``--overload F``, the closed-loop run above measures
the sustainable rate (its throughput); then searches are sent open-loop, at F times that rate, for
``--overload-seconds``, whatever the answers: each request has 10 s before it counts as a timeout,
``/healthz`` is asked every 0.2 s meanwhile, and resident memory is sampled every second. The
``overload`` part of the report gives the statuses, the latency of the 200s and of the 429s, the health
answers and the memory. With ``--writes N`` (and a key), N upserts of one document follow, one at a
time, each followed by a search for it and a delete: their latency and how many the next search saw,
under the server's ``service.refresh`` (set ``ESBRIDGE_SERVICE__REFRESH`` to compare policies).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from esbridge.errors import DependencyMissing
from esbridge.ingest.beir import read_beir_queries

try:
    import httpx
    import psutil
except ImportError as exc:  # the load test is a development tool: both come with the dev extra
    raise DependencyMissing(exc.name or "httpx", "dev", "the service load test") from exc


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def resident_bytes(process: psutil.Process) -> int:
    """RSS of ``process`` and its children (the server's embedding process, ``embedding.query_processes``)."""
    import psutil

    total = process.memory_info().rss
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += child.memory_info().rss
    return total


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest rank: the smallest sample with at least ``fraction`` of the samples at or below it."""
    return round(ordered[max(0, math.ceil(round(fraction * len(ordered), 9)) - 1)], 2)


def start_server(
    url: str, index: str, port: int, cache_dir: Path, keys: list[str] | None = None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "ESBRIDGE_PIPELINE__CACHE__RESULTS": "0",
        "ESBRIDGE_PIPELINE__CACHE__EMBEDDINGS": "0",
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(cache_dir),
        "ESBRIDGE_API_KEYS": ",".join(keys or []),
    }
    command = [sys.executable, "-m", "esbridge", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--url", url, "--index", index, "--log-level", "warning"]
    return subprocess.Popen(command, env=env)  # noqa: S603 (our own interpreter and arguments)


def stop_server(server: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it has not exited within ``timeout_s``."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def wait_ready(base: str, server: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"esbridge serve exited with {server.returncode}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"esbridge serve was not ready within {timeout_s:g} s")


async def run_load(
    base: str,
    queries: list[str],
    *,
    requests: int,
    seconds: float,
    concurrency: int,
    top_n: int,
    memory: psutil.Process | None = None,
    keys: list[str] | None = None,
) -> dict[str, Any]:
    """Run the load; with ``memory``, that process's RSS (MB, with its children) is sampled after every tenth
    of the requests; with ``keys``, client i presents key i modulo their number."""
    rss_samples: list[float] = []
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    sent = 0
    started = time.perf_counter()
    deadline = started + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client(http: httpx.AsyncClient, number: int) -> None:
        nonlocal sent
        headers = {"X-API-Key": keys[number % len(keys)]} if keys else {}
        while sent < requests and time.perf_counter() < deadline:
            query = queries[sent % len(queries)]
            sent += 1
            if memory is not None and sent % max(1, requests // 10) == 0:
                rss_samples.append(round(resident_bytes(memory) / 2**20, 1))
            began = time.perf_counter()
            try:
                answer = await http.post("/v1/search", json={"query": query, "top_n": top_n}, headers=headers)
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1
                continue
            latencies.append((time.perf_counter() - began) * 1000)
            statuses[str(answer.status_code)] += 1
            if answer.status_code == 200:
                modes[answer.json()["search_mode"]] += 1

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(http, number) for number in range(concurrency)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    errors = sum(count for status, count in statuses.items() if status != "200")
    return {
        "requests": sent,
        "seconds": round(elapsed, 2),
        "throughput_rps": round(sent / elapsed, 1),
        "latency_ms": {
            "p50": round(statistics.median(ordered), 2) if ordered else None,
            "p95": percentile(ordered, 0.95) if ordered else None,
            "p99": percentile(ordered, 0.99) if ordered else None,
            "max": round(ordered[-1], 2) if ordered else None,
        },
        "errors": errors,
        "statuses": dict(statuses),
        "search_modes": dict(modes),
        "rss_mb_every_tenth": rss_samples,
    }


def main(argv: list[str] | None = None) -> None:
    from esbridge.evaluation.service_overload import overload_verdict, run_overload, run_writes

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the engine the sidecar searches")
    parser.add_argument("--index", required=True)
    parser.add_argument("--queries", type=Path, required=True, help="a BEIR dataset folder with queries.jsonl")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--top-n", type=int, default=10)
    parser.add_argument("--keys", type=int, default=0, help="API keys the server accepts and the clients use")
    parser.add_argument("--overload", type=float, default=0.0, help="then send at this multiple of the throughput")
    parser.add_argument("--overload-seconds", type=float, default=20.0)
    parser.add_argument("--writes", type=int, default=0, help="then upsert, search and delete this many documents")
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= 100_000 or not 0 < args.seconds <= 3600 or not 1 <= args.concurrency <= 256:
        parser.error("bounds: 1 <= --requests <= 100000, 0 < --seconds <= 3600, 1 <= --concurrency <= 256")
    if not 0 <= args.keys <= 1000 or not 0 <= args.overload <= 20 or not 0 < args.overload_seconds <= 600:
        parser.error("bounds: 0 <= --keys <= 1000, 0 <= --overload <= 20, 0 < --overload-seconds <= 600")
    if not 0 <= args.writes <= 1000 or (args.writes and not args.keys):
        parser.error("--writes takes 0..1000 and needs --keys (writes need a key)")
    keys = [f"load-key-{number}-{os.urandom(8).hex()}" for number in range(args.keys)]

    texts = list(read_beir_queries(args.queries).values())
    warmup, measured = texts[-args.warmup :] if args.warmup else [], texts[: max(1, len(texts) - args.warmup)]
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="esbridge-load-") as cache_dir:
        server = start_server(args.url, args.index, port, Path(cache_dir), keys)
        try:
            wait_ready(base, server)
            process = psutil.Process(server.pid)
            if warmup:
                asyncio.run(
                    run_load(base, warmup, requests=len(warmup), seconds=60, concurrency=2, top_n=args.top_n, keys=keys)
                )
            rss_before = resident_bytes(process)
            report = asyncio.run(
                run_load(
                    base,
                    measured,
                    requests=args.requests,
                    seconds=args.seconds,
                    concurrency=args.concurrency,
                    top_n=args.top_n,
                    memory=process,
                    keys=keys,
                )
            )
            rss_after = resident_bytes(process)
            if args.overload:
                rate = args.overload * report["throughput_rps"]
                used = min(report["requests"], len(measured))  # texts the server has embedded already
                unseen = measured[used:] + [f"{text} 0" for text in measured[:used]]
                overload = asyncio.run(
                    run_overload(
                        base,
                        unseen,
                        rate=rate,
                        seconds=args.overload_seconds,
                        top_n=args.top_n,
                        keys=keys,
                        memory=process,
                    )
                )
                overload["factor"] = args.overload
                overload["problems"] = overload_verdict(overload)
                report["overload"] = overload
            if args.writes:
                report["writes"] = asyncio.run(run_writes(base, args.writes, keys[0]))
        finally:
            stop_server(server)
    p50, p99 = report["latency_ms"]["p50"], report["latency_ms"]["p99"]
    report.update(
        {
            "concurrency": args.concurrency,
            "distinct_queries": min(len(measured), report["requests"]),
            "rss_mb": {
                "before": round(rss_before / 2**20, 1),
                "after": round(rss_after / 2**20, 1),
                "growth_pct": round((rss_after - rss_before) / rss_before * 100, 2),
            },
            "p99_over_p50": round(p99 / p50, 2) if p50 else None,
        }
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
