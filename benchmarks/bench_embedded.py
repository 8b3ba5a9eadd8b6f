"""The embedded engine at scale: ingest, reopen, kNN recall and latency, BM25, hybrid, filters, memory, QPS.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/bench-1m

Chunks carry real text: titles and 60-word windows of SciFact abstracts and Dendron vault notes, cycled with
variation (a different window, two words from elsewhere). Vectors are synthetic, 384-d: points around 2,000
random centres (a clustered cloud, like real embeddings; uniform noise would be the hardest case for any
graph), generated batch by batch from a seed so the benchmark never holds them all. Recall@10 is measured
against exact top-10s computed while streaming the same vectors. Every figure is printed with its name;
the process's resident memory (VmRSS, and VmHWM for the peak) is read from /proc after each stage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from esbridge.blas import limit_blas_threads
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ALIAS = "bench"
CENTRES = 2000
BATCH = 2000


def _rss() -> str:
    status = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    return f"RSS {rss:,.0f} MB (peak {peak:,.0f} MB)"


def _throughput(concurrency: int, search: Callable[[int], None], seconds: float = 4.0) -> tuple[float, float]:
    """Searches per second when ``concurrency`` threads call ``search(i)`` with their own sequence of ``i``, and
    the cores the process kept busy meanwhile (its CPU seconds per second)."""
    done = 0
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def work(worker: int) -> None:
        nonlocal done
        i = worker
        while time.perf_counter() < stop:
            search(i)
            i += concurrency
            with lock:
                done += 1

    cpu = time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(work, range(concurrency)))
    return done / seconds, (time.process_time() - cpu) / seconds


def _load() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _ms(samples: Sequence[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms (n={len(ordered)})"


def texts() -> list[tuple[str, str]]:
    """(title, text) of every SciFact abstract and vault note."""
    found = []
    with (SHARED / "beir" / "scifact" / "corpus.jsonl").open() as lines:
        for line in lines:
            record = json.loads(line)
            found.append((record["title"], record["text"]))
    for note in sorted((SHARED / "vault" / "dendron-site" / "vault").glob("*.md")):
        body = note.read_text(errors="replace")
        found.append((note.stem.replace(".", " "), re.sub(r"^---.*?---", "", body, flags=re.S)))
    return found


class Vectors:
    """Seeded clustered unit vectors, batch by batch; the same seed gives the same stream."""

    def __init__(self, dimension: int, seed: int = 7) -> None:
        self.dimension = dimension
        rng = np.random.default_rng(seed)
        self.centres = rng.standard_normal((CENTRES, dimension)).astype(np.float32)
        self.seed = seed

    def batches(self, size: int) -> Iterator[npt.NDArray[np.float32]]:
        rng = np.random.default_rng(self.seed + 1)
        for start in range(0, size, BATCH):
            count = min(BATCH, size - start)
            picks = rng.integers(0, CENTRES, count)
            batch = self.centres[picks] + 0.6 * rng.standard_normal((count, self.dimension)).astype(np.float32)
            yield (batch / np.linalg.norm(batch, axis=1, keepdims=True)).astype(np.float32)

    def queries(self, count: int) -> npt.NDArray[np.float32]:
        rng = np.random.default_rng(self.seed + 2)
        picks = rng.integers(0, CENTRES, count)
        batch = self.centres[picks] + 0.6 * rng.standard_normal((count, self.dimension)).astype(np.float32)
        unit: npt.NDArray[np.float32] = (batch / np.linalg.norm(batch, axis=1, keepdims=True)).astype(np.float32)
        return unit


def chunk(i: int, corpus: Sequence[tuple[str, str]], vocabulary: Sequence[str], rng: random.Random) -> dict[str, Any]:
    title, text = corpus[i % len(corpus)]
    words = text.split()
    start = rng.randrange(max(1, len(words) - 60)) if len(words) > 60 else 0
    body = " ".join([*words[start : start + 60], rng.choice(vocabulary), rng.choice(vocabulary)])
    return {
        "chunk_id": f"c{i}",
        "doc_id": f"d{i // 4}",
        "chunk_index": i % 4,
        "source": "bench",
        "title": title,
        "body": body,
        "path": f"bench/{i % 1000}/d{i // 4}.md",
        "tags": ["rare"] if i % 100 == 0 else ["common"],
        "status": "active",
        "embedding": "ok",
    }


class Fixed:
    """An embedder that answers precomputed vectors, so hybrid timings exclude the model."""

    name = identity = "fixed"
    max_tokens = 512

    def __init__(self, vectors: dict[str, list[float]], dimension: int) -> None:
        self.vectors = vectors
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[text] for text in texts]


def vocabulary_of(corpus: Sequence[tuple[str, str]]) -> list[str]:
    """The words (four letters or more) of the first 2,000 source texts, sorted: what chunks and queries draw on."""
    return sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})


def query_phrases(vocabulary: Sequence[str], rng: random.Random, count: int) -> list[str]:
    """``count`` queries of three words longer than five letters."""
    words = [w for w in vocabulary if len(w) > 5]
    return [" ".join(rng.sample(words, 3)) for _ in range(count)]


def mixed_searches(
    engine: EmbeddedEngine, phrases: Sequence[str], queries: npt.NDArray[np.float32]
) -> Callable[[int], None]:
    """The i-th search of the half-BM25, half-kNN load: BM25 of a phrase when i is odd, kNN of a vector when even."""

    def one(i: int) -> None:
        if i % 2:
            body = bodies.bm25_body("opensearch", phrases[i % len(phrases)], size=10, filters=Filters())
        else:
            body = bodies.knn_body("opensearch", queries[i % len(queries)].tolist(), k=10, filters=Filters(),
                                   num_candidates=100)  # fmt: skip
        engine.search(ALIAS, body)

    return one


def hybrid_searcher(engine: EmbeddedEngine, phrases: Sequence[str], queries: npt.NDArray[np.float32]) -> HybridSearcher:
    """Hybrid search over ``engine``'s index, the i-th phrase embedded as the i-th query vector (no model)."""
    fixed = Fixed({phrase: queries[i].tolist() for i, phrase in enumerate(phrases)}, queries.shape[1])
    return HybridSearcher(AsyncEmbeddedEngine(engine=engine), ALIAS, fixed)  # type: ignore[arg-type]


def _merge_truth(
    best: list[list[tuple[float, int]]], batch: npt.NDArray[np.float32], first: int, queries: npt.NDArray[np.float32]
) -> None:
    """Fold a batch into each query's exact top 10 (similarity, chunk number)."""
    similarity = batch @ queries.T
    for q in range(len(queries)):
        top = np.argpartition(-similarity[:, q], 10)[:10]
        best[q] = sorted([*best[q], *((float(similarity[t, q]), first + int(t)) for t in top)], reverse=True)[:10]


def _ingest(
    folder: Path,
    size: int,
    corpus: Sequence[tuple[str, str]],
    vocabulary: Sequence[str],
    rng: random.Random,
    vectors: Vectors,
    queries: npt.NDArray[np.float32],
    best: list[list[tuple[float, int]]],
) -> None:
    engine = EmbeddedEngine(folder)
    IndexManager(engine, ALIAS, IndexParameters(dimension=vectors.dimension, analysis="full")).create()
    started = time.perf_counter()
    inside = 0.0  # seconds in the engine (bulk calls and the final close), without the benchmark's own work
    for number, batch in enumerate(vectors.batches(size)):
        first = number * BATCH
        actions = [
            BulkAction("index", f"c{first + i}", {**chunk(first + i, corpus, vocabulary, rng), "vector": v.tolist()})
            for i, v in enumerate(batch)
        ]
        began = time.perf_counter()
        result = engine.bulk(ALIAS, actions)
        inside += time.perf_counter() - began
        assert not result.failed, result.failed[:1]
        _merge_truth(best, batch, first, queries)
        if (first + BATCH) % 100_000 == 0:
            rate = (first + BATCH) / inside
            print(f"  {first + BATCH:,} ingested, {rate:,.0f}/s in the engine; {_rss()}; {_load()}", flush=True)
    began = time.perf_counter()
    engine.close()
    inside += time.perf_counter() - began
    ingest_s = time.perf_counter() - started
    print(
        f"ingest: {size:,} in {inside:.1f} s in the engine = {size / inside:,.0f} chunks/s "
        f"({size / ingest_s:,.0f}/s wall clock, with building the documents and the exact top-10s)",
        flush=True,
    )
    disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
    print(f"data directory: {disk:,.0f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--folder", type=Path, required=True, help="an empty or missing folder for the data")
    parser.add_argument("--reuse", action="store_true", help="search the data a previous run left in --folder")
    parser.add_argument("--concurrency", type=int, default=4, help="searching threads compared with one")
    args = parser.parse_args()
    blas = "one thread" if limit_blas_threads() else "as the environment sets"  # as in esbridge's own processes
    size, dimension, folder = args.size, args.dimension, args.folder
    corpus = texts()
    vocabulary = vocabulary_of(corpus)
    rng = random.Random(11)  # noqa: S311 (a benchmark's sample, not a secret)
    vectors = Vectors(dimension)
    queries = vectors.queries(args.queries)
    best: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
    print(f"{size:,} chunks x {dimension}d, {len(corpus):,} source texts; BLAS {blas}; {_rss()}; {_load()}", flush=True)

    if args.reuse:  # a previous run's data: drop the chunks its write test added, recompute the exact top-10s
        engine = EmbeddedEngine(folder)
        engine.bulk(ALIAS, [BulkAction("delete", f"w{r}-{i}") for r in range(5) for i in range(100)])
        engine.close()
        for number, batch in enumerate(vectors.batches(size)):
            _merge_truth(best, batch, number * BATCH, queries)
    else:
        _ingest(folder, size, corpus, vocabulary, rng, vectors, queries, best)

    began = time.perf_counter()
    engine = EmbeddedEngine(folder)
    engine.count(ALIAS)
    opening = bodies.knn_body("opensearch", queries[0].tolist(), k=10, filters=Filters(), num_candidates=100)
    engine.search(ALIAS, opening)
    print(f"reopen to first kNN answer: {time.perf_counter() - began:.2f} s; {_rss()}", flush=True)

    def knn(q: int, filters: Filters) -> tuple[float, list[int]]:
        body = bodies.knn_body("opensearch", queries[q].tolist(), k=10, filters=filters, num_candidates=100)
        began = time.perf_counter()
        hits = engine.search(ALIAS, body).hits
        return time.perf_counter() - began, [int(hit.id[1:]) for hit in hits]

    timings, recalls = [], []
    for q in range(len(queries)):
        elapsed, found = knn(q, Filters())
        timings.append(elapsed)
        recalls.append(len(set(found) & {row for _, row in best[q]}) / 10)
    print(f"kNN k=10: {_ms(timings)}, recall@10 vs exact {statistics.mean(recalls):.3f}", flush=True)
    rare = [knn(q, Filters(terms={"tags": ["rare"]})) for q in range(len(queries))]
    print(f"kNN k=10, 1% filter: {_ms([t for t, _ in rare])}, min hits {min(len(h) for _, h in rare)}", flush=True)

    phrases = query_phrases(vocabulary, rng, len(queries))
    lexical = []
    for phrase in phrases:
        body = bodies.bm25_body("opensearch", phrase, size=10, filters=Filters())
        began = time.perf_counter()
        engine.search(ALIAS, body)
        lexical.append(time.perf_counter() - began)
    print(f"BM25 3 words: {_ms(lexical)}", flush=True)

    hybrid = hybrid_searcher(engine, phrases, queries)

    async def fused() -> list[float]:
        spent = []
        for phrase in phrases:
            began = time.perf_counter()
            await hybrid.search(SearchRequest(query=phrase))
            spent.append(time.perf_counter() - began)
        return spent

    print(f"hybrid (BM25 + kNN, fused; no embedding): {_ms(asyncio.run(fused()))}", flush=True)

    after_write, writes, together = [], [], []
    for round_ in range(5):
        extra = [
            BulkAction(
                "index",
                f"w{round_}-{i}",
                {
                    **chunk(i, corpus, vocabulary, rng),
                    "chunk_id": f"w{round_}-{i}",
                    "vector": queries[i % len(queries)].tolist(),
                },
            )
            for i in range(100)
        ]
        wrote = time.perf_counter()
        engine.bulk(ALIAS, extra)
        began = time.perf_counter()
        writes.append(began - wrote)
        hits = engine.search(ALIAS, bodies.knn_body("opensearch", queries[0].tolist(), k=10, filters=Filters(),
                                                    num_candidates=100)).hits  # fmt: skip
        after_write.append(time.perf_counter() - began)
        together.append(time.perf_counter() - wrote)
        assert hits[0].id == f"w{round_}-0" or hits[0].id.startswith("w"), hits[0].id
    print(f"kNN right after a 100-chunk write: {_ms(after_write)}; {_rss()}", flush=True)
    print(f"  the write itself: {_ms(writes)}; write and search together: {_ms(together)}", flush=True)

    def native_qps(concurrency: int) -> tuple[float, float]:
        """The ceiling: the same half-BM25, half-kNN load on tantivy and usearch directly, no esbridge code."""
        record = engine._store.index(engine.alias_targets(ALIAS)[0])
        assert record is not None
        handles = engine._shared.ready(engine._store, record)
        graph, text = handles.vectors["vector"].graph, handles.lexical
        parsed = [text.index.parse_query(phrase, [text.layout.text["body"]]) for phrase in phrases]

        def one(i: int) -> None:
            if i % 2:
                text.searcher().search(parsed[i % len(parsed)], limit=10)
            else:
                graph.search(queries[i % len(queries)], 10)

        return _throughput(concurrency, one)

    def qps(concurrency: int) -> tuple[float, float]:
        return _throughput(concurrency, mixed_searches(engine, phrases, queries))

    loops = threading.local()
    opened: list[asyncio.AbstractEventLoop] = []
    hybrid._responses = None  # every search answered, none from the response cache

    def hybrid_qps(concurrency: int) -> tuple[float, float]:
        """Whole hybrid searches (BM25 and kNN in two threads at once, fused), each thread with its own loop."""

        def one(i: int) -> None:
            loop = getattr(loops, "loop", None)
            if loop is None:
                loop = loops.loop = asyncio.new_event_loop()
                opened.append(loop)
            loop.run_until_complete(hybrid.search(SearchRequest(query=phrases[i % len(phrases)])))

        return _throughput(concurrency, one)

    # Alternated, so a change in what else the machine runs weighs on both alike.
    many = args.concurrency
    for label, measure in (
        ("QPS (half BM25, half kNN)", qps),
        ("  tantivy and usearch alone", native_qps),
        ("  hybrid searches", hybrid_qps),
    ):
        one = four = cores_one = cores_four = 0.0
        for _ in range(3):
            rate, cores = measure(1)
            one, cores_one = one + rate / 3, cores_one + cores / 3
            rate, cores = measure(many)
            four, cores_four = four + rate / 3, cores_four + cores / 3
        print(
            f"{label}: concurrency 1 {one:.0f}/s ({cores_one:.2f} cores busy), concurrency {many} {four:.0f}/s "
            f"({cores_four:.2f} cores) = {four / one:.2f}x; {_load()}",
            flush=True,
        )
    for loop in opened:
        loop.close()
    print(f"final: {_rss()}; {_load()}", flush=True)
    engine.close()


if __name__ == "__main__":
    main()
