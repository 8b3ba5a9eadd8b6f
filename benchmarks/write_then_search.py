"""What searches wait for around a large write at scale: kNN searches from another thread during a 2,000-chunk
bulk request, and tantivy's commit that the search right after it makes (after new chunks, and after deletions
alone), on a copy of a data directory ``bench_embedded.py`` left.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/emb-b1m --queries 100
    cp -a /tmp/emb-b1m /tmp/emb-b1m-ab
    .venv/bin/python benchmarks/write_then_search.py --folder /tmp/emb-b1m-ab

Each turn writes 2,000 new chunks while another thread searches, then searches, then deletes them and searches
again. The commits the searches make are timed inside (tantivy's own, the state file, the reader's reload). The
copy changes.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench_embedded import ALIAS, BATCH, Vectors, _load, chunk, texts

from esbridge.blas import limit_blas_threads
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, lexical
from esbridge.query import bodies
from esbridge.query.models import Filters

commits: list[tuple[float, float, float]] = []


def timed_commit(self: Any) -> None:
    """``LexicalIndex.commit``, its three parts timed."""
    with self._lock:
        if not self.dirty or self._writer is None:
            return
        began = time.perf_counter()
        self._writer.commit()
        committed = time.perf_counter()
        if not self.fresh:
            self._write_state(self.held)
        stated = time.perf_counter()
        self.applied = self.held
        self._waiting = 0
        self.index.reload()
        commits.append((committed - began, stated - committed, time.perf_counter() - stated))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    limit_blas_threads()
    lexical.LexicalIndex.commit = timed_commit  # type: ignore[method-assign]
    engine = EmbeddedEngine(args.folder)
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    rng = random.Random(11)  # noqa: S311 (a benchmark's sample)
    vectors = Vectors(384)
    queries = vectors.queries(100)
    extra = [vector for batch in vectors.batches(BATCH) for vector in batch][:BATCH]

    def knn(i: int) -> dict[str, object]:
        return bodies.knn_body("opensearch", queries[i % len(queries)].tolist(), k=10, filters=Filters(),
                               num_candidates=100)  # fmt: skip

    def search_meanwhile(stop: threading.Event, took: list[float]) -> None:
        i = 0
        while not stop.is_set():
            began = time.perf_counter()
            engine.search(ALIAS, knn(i))
            took.append((time.perf_counter() - began) * 1000)
            i += 1

    engine.search(ALIAS, knn(0))
    for turn in range(args.rounds):
        written = [
            BulkAction("index", f"t{turn}-{i}", {**chunk(i, corpus, vocabulary, rng), "vector": v.tolist()})
            for i, v in enumerate(extra)
        ]
        stop, took = threading.Event(), list[float]()
        searcher = threading.Thread(target=search_meanwhile, args=(stop, took))
        commits.clear()  # (the commit of the request's documents: made by whichever search comes first)
        searcher.start()
        began = time.perf_counter()
        engine.bulk(ALIAS, written)
        bulk_s = time.perf_counter() - began
        stop.set()
        searcher.join()
        began = time.perf_counter()
        engine.search(ALIAS, knn(1))
        after_s = time.perf_counter() - began
        added = list(commits)
        engine.bulk(ALIAS, [BulkAction("delete", action.id) for action in written])
        commits.clear()
        engine.search(ALIAS, knn(2))
        deleted = list(commits)
        print(
            f"turn {turn}: the {len(written):,}-chunk request {bulk_s:.2f} s, {len(took)} kNN searches beside it "
            f"(p50 {statistics.median(took):.1f} ms, longest {max(took):.0f} ms); the search after it {after_s:.2f} s; "
            f"commits (tantivy, state, reload) after new chunks {_ms(added)}, after deletions {_ms(deleted)}; "
            f"{_load()}",
            flush=True,
        )
    engine.close()


def _ms(parts: list[tuple[float, float, float]]) -> str:
    return ", ".join(" / ".join(f"{1000 * part:.0f}" for part in commit) + " ms" for commit in parts) or "none"


if __name__ == "__main__":
    main()
