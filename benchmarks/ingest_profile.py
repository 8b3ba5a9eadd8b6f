"""Where the embedded engine's ingest time goes, per chunk: the graph, SQLite, tantivy, Python.

    .venv/bin/python benchmarks/ingest_profile.py --size 50000 --folder /tmp/emb-prof
    .venv/bin/python benchmarks/ingest_profile.py --size 50000 --folder /tmp/emb-prof --no-graph --profile
    .venv/bin/python benchmarks/ingest_profile.py --size 100000 --folder /tmp/emb-prof --add-slice 1000000000

The chunks and vectors are ``bench_embedded``'s. ``--no-graph`` replaces the graph update by nothing (the
rest of the engine's work alone, an upper bound for any graph); ``--profile`` prints cProfile's top
functions by own time; ``--add-slice`` sets how many vectors go into the graph a call (``ann.ADD_SLICE``; a
number above the bulk size adds each write in one call). CPU is the process's (every thread) and, apart, the
writing thread's own (the caller of ``bulk``, which holds Python's lock while it runs Python).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import re
import shutil
import time
from pathlib import Path

from bench_embedded import ALIAS, BATCH, Vectors, chunk, texts

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--no-graph", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--add-slice", type=int, default=ann.ADD_SLICE)
    args = parser.parse_args()
    shutil.rmtree(args.folder, ignore_errors=True)
    ann.ADD_SLICE = args.add_slice
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    rng = random.Random(11)  # noqa: S311
    vectors = Vectors(384)
    if args.no_graph:
        ann.VectorIndex.apply = lambda self, removed, rows, vectors, seq: setattr(self, "applied", seq)  # type: ignore[method-assign]
    batches = []
    for number, batch in enumerate(vectors.batches(args.size)):
        first = number * BATCH
        batches.append(
            [
                BulkAction(
                    "index", f"c{first + i}", {**chunk(first + i, corpus, vocabulary, rng), "vector": v.tolist()}
                )
                for i, v in enumerate(batch)
            ]
        )
    engine = EmbeddedEngine(args.folder)
    IndexManager(engine, ALIAS, IndexParameters(dimension=384, analysis="full")).create()
    profiler = cProfile.Profile() if args.profile else None
    began = time.perf_counter()
    cpu, own = time.process_time(), time.thread_time()
    if profiler:
        profiler.enable()
    for actions in batches:
        engine.bulk(ALIAS, actions)
    engine.close()
    if profiler:
        profiler.disable()
    spent, used, writing = time.perf_counter() - began, time.process_time() - cpu, time.thread_time() - own
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"{args.size:,} chunks{' without the graph' if args.no_graph else ''}: {spent:.1f} s, "
        f"{args.size / spent:,.0f}/s; CPU {used:.1f} s ({used / args.size * 1e6:.0f} us per chunk, the writing thread "
        f"{writing / args.size * 1e6:.0f}); load {load}"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
