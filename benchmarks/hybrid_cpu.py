"""The process's CPU per hybrid search on the embedded engine: the Python around the two engine calls.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_embedded.py --size 100000 --folder /tmp/bench-100k
    PYTHONPATH=$PWD .venv/bin/python benchmarks/hybrid_cpu.py --folder /tmp/bench-100k [--profile] [--check FILE]

Opens a folder bench_embedded.py filled and runs its hybrid searches (BM25 and kNN at once, fused, the query
vectors precomputed, no response cache) with the phrases its ``--reuse`` run draws. Prints CPU seconds of the
process per search (``time.process_time()``, which other load on the machine moves less than wall time; the
least of several passes, since a busy machine still slows a pass) and the wall p50.
``--profile`` adds the top functions of a cProfile by own time and by cumulative time, of one more pass in
which the engine's calls run in the searching thread (a profile sees one thread). ``--check FILE`` writes
(when FILE is missing) or compares (when it exists) the full answers of 200 searches, explanations included
and every score as Python prints it, less the timings: two versions of the code must answer identically.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_embedded import Vectors, hybrid_searcher, query_phrases, texts, vocabulary_of

from esbridge.blas import limit_blas_threads
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher

CHECKED = 200


def _setup(folder: Path, count: int) -> tuple[EmbeddedEngine, HybridSearcher, list[str]]:
    vectors = Vectors(384)
    phrases = query_phrases(vocabulary_of(texts()), random.Random(11), count)  # noqa: S311 (a benchmark's sample)
    engine = EmbeddedEngine(folder)
    hybrid = hybrid_searcher(engine, phrases, vectors.queries(count))
    hybrid._responses = None  # every search answered, none from the response cache
    return engine, hybrid, phrases


def _answer(response: Any) -> dict[str, Any]:
    """The response less what differs from run to run: how long it took."""
    dumped: dict[str, Any] = response.model_dump(mode="json")
    dumped.pop("took_ms")
    dumped["details"]["timings_ms"] = sorted(dumped["details"]["timings_ms"])
    return dumped


def check(hybrid: HybridSearcher, phrases: list[str], file: Path) -> bool:
    """Every second search explained; True when the answers equal FILE's (or FILE was written)."""

    async def run() -> list[dict[str, Any]]:
        return [
            _answer(await hybrid.search(SearchRequest(query=phrase, explain=i % 2 == 1)))
            for i, phrase in enumerate(phrases[:CHECKED])
        ]

    answers = [json.loads(json.dumps(answer)) for answer in asyncio.run(run())]
    if not file.exists():
        file.write_text(json.dumps(answers, indent=1) + "\n")
        print(f"wrote {len(answers)} answers to {file}")
        return True
    expected = json.loads(file.read_text())
    differ = [i for i, (old, new) in enumerate(zip(expected, answers, strict=True)) if old != new]
    if differ:
        print(f"{len(differ)} of {len(answers)} answers differ from {file}, the first: search {differ[0]}")
        print(json.dumps(expected[differ[0]], indent=1)[:3000])
        print(json.dumps(answers[differ[0]], indent=1)[:3000])
        return False
    print(f"all {len(answers)} answers equal {file}'s")
    return True


class _Inline(ThreadPoolExecutor):
    """Runs each call at once in the calling thread: the profile (of one thread) then sees the engine's Python."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # (handed to the awaiting coroutine, as a thread's would be)
            done.set_exception(exc)
        return done


def measure(
    hybrid: HybridSearcher, phrases: list[str], rounds: int, *, inline: bool = False
) -> tuple[list[float], float]:
    """CPU seconds of the process per search in each of ``rounds`` passes through the phrases, and the wall p50
    of all; ``inline``: the engine calls run one after the other in this thread instead of two worker threads."""
    loop = asyncio.new_event_loop()
    if inline:
        loop.set_default_executor(_Inline())
    for phrase in phrases[:20]:  # warm: handles opened, caches of the analyzers filled
        loop.run_until_complete(hybrid.search(SearchRequest(query=phrase)))
    walls, per_round = [], []
    for _ in range(rounds):
        cpu = time.process_time()
        for phrase in phrases:
            began = time.perf_counter()
            loop.run_until_complete(hybrid.search(SearchRequest(query=phrase)))
            walls.append(time.perf_counter() - began)
        per_round.append((time.process_time() - cpu) / len(phrases))
    loop.close()
    return per_round, statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True, help="a folder bench_embedded.py filled")
    parser.add_argument("--queries", type=int, default=CHECKED, help="distinct phrases searched")
    parser.add_argument("--rounds", type=int, default=5, help="passes through the phrases timed")
    parser.add_argument("--profile", action="store_true", help="print a cProfile's top functions")
    parser.add_argument("--top", type=int, default=30, help="functions printed per ordering")
    parser.add_argument("--check", type=Path, help="write, or compare with, the answers of 200 searches")
    args = parser.parse_args()
    if not (args.folder / "esbridge.sqlite3").exists():
        parser.error(f"{args.folder} holds no embedded engine's data: fill it with bench_embedded.py first")
    if args.check and args.queries < CHECKED:
        parser.error(f"--check searches {CHECKED} phrases: --queries must be at least {CHECKED}")
    limit_blas_threads()
    engine, hybrid, phrases = _setup(args.folder, args.queries)
    try:
        if args.check and not check(hybrid, phrases, args.check):
            sys.exit(1)
        per_round, p50 = measure(hybrid, phrases, args.rounds)
        print(
            f"hybrid search: CPU per search {min(per_round) * 1000:.2f} ms (the least of {args.rounds} passes of "
            f"{len(phrases)}; median {statistics.median(per_round) * 1000:.2f} ms), wall p50 {p50 * 1000:.2f} ms"
        )
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            measure(hybrid, phrases, 1, inline=True)
            profile.disable()
            for order in ("tottime", "cumtime"):
                print(f"\ntop {args.top} by {order}:")
                pstats.Stats(profile, stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(args.top)
    finally:
        engine.close()


if __name__ == "__main__":
    main()
