"""Searches a second on the embedded engine as more threads search at once, with its bound on the searches it
runs at once (``EmbeddedEngine(searches_at_once=...)``) and without one.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/bench-1m
    PYTHONPATH=$PWD .venv/bin/python benchmarks/search_admission.py --folder /tmp/bench-1m

Opens a folder bench_embedded.py filled, once per turn, with the default bound (``default``), with each bound
given in ``--bounds`` and with none (``none``: more than the threads ever searching), and measures in each turn
the two loads of bench_embedded.py: whole hybrid searches (BM25 and kNN at once, fused, the query vectors
precomputed, no response cache; each searching thread with its own event loop) and half BM25, half kNN through
the engine, at each of ``--threads``. Turns alternate, so a change in what else the machine runs weighs on all
alike; a line gives the mean of the turns, and the cores the process kept busy.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench_embedded import (
    Vectors,
    _load,
    _throughput,
    hybrid_searcher,
    mixed_searches,
    query_phrases,
    texts,
    vocabulary_of,
)

from esbridge.blas import limit_blas_threads
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.engine import default_searches_at_once
from esbridge.query.models import SearchRequest

UNBOUNDED = 10_000


def _loads(engine: EmbeddedEngine, phrases: list[str], vectors: Vectors) -> dict[str, Callable[[int], None]]:
    queries = vectors.queries(len(phrases))
    hybrid = hybrid_searcher(engine, phrases, queries)
    hybrid._responses = None  # every search answered, none from the response cache
    loops = threading.local()

    def whole(i: int) -> None:
        loop = getattr(loops, "loop", None)
        if loop is None:
            loop = loops.loop = asyncio.new_event_loop()
        loop.run_until_complete(hybrid.search(SearchRequest(query=phrases[i % len(phrases)])))

    return {"hybrid searches": whole, "half BM25, half kNN": mixed_searches(engine, phrases, queries)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True, help="a folder bench_embedded.py filled")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="threads searching")
    parser.add_argument("--bounds", type=int, nargs="*", default=[], help="bounds measured beside the default")
    parser.add_argument("--turns", type=int, default=3, help="turns per bound")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per measurement")
    args = parser.parse_args()
    if not (args.folder / "esbridge.sqlite3").exists():
        parser.error(f"{args.folder} holds no embedded engine's data: fill it with bench_embedded.py first")
    limit_blas_threads()
    phrases = query_phrases(vocabulary_of(texts()), random.Random(11), 200)  # noqa: S311 (a benchmark's sample)
    vectors = Vectors(384)
    bounds = {f"default ({default_searches_at_once()})": default_searches_at_once()}
    bounds |= {str(bound): bound for bound in args.bounds} | {"none": UNBOUNDED}
    rates: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    for turn in range(args.turns):
        for name, bound in bounds.items():
            engine = EmbeddedEngine(args.folder, searches_at_once=bound)
            try:
                for load, search in _loads(engine, phrases, vectors).items():
                    for i in range(30):  # warm: handles opened, caches filled
                        search(i)
                    for threads in args.threads:
                        rates.setdefault((load, name, threads), []).append(_throughput(threads, search, args.seconds))
            finally:
                engine.close()
            print(f"turn {turn + 1} of {args.turns}, bound {name} done at {time.strftime('%H:%M:%S')}; {_load()}",
                  flush=True)  # fmt: skip
    for load in ("hybrid searches", "half BM25, half kNN"):
        print(f"{load}, searches a second (cores busy) at {', '.join(map(str, args.threads))} threads:")
        for name in bounds:
            cells = []
            for threads in args.threads:
                measured = rates[(load, name, threads)]
                rate = sum(r for r, _ in measured) / len(measured)
                cores = sum(c for _, c in measured) / len(measured)
                cells.append(f"{rate:.0f}/s ({cores:.2f})")
            print(f"  bound {name}: {'; '.join(cells)}")


if __name__ == "__main__":
    main()
