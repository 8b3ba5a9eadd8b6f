"""The libraries behind the embedded engine, compared on the same data: full text and vector search.

    .venv/bin/python benchmarks/libraries.py text --size 100000
    .venv/bin/python benchmarks/libraries.py vectors --size 100000

``text``: SQLite FTS5 (``porter unicode61``, ``bm25()``, top 10 by ``ORDER BY rank``) against tantivy
(the engine's English chain, BM25, top 10) over the same chunks (SciFact abstracts cut into 60-word
windows, cycled with variation), timing the build and 3-word OR queries.

``vectors``: usearch (HNSW, several storage types and build widths), hnswlib and faiss-cpu (HNSW flat),
each with M=16, over the clustered synthetic 384-d vectors of ``bench_embedded``: build time, memory,
recall@10 against exact search and query latency; and, for usearch, a 1% filter met by exact search over
the allowed rows (none of the three filters inside its graph search from Python). hnswlib and faiss-cpu
are not dependencies: install them to run their rows (``pip install hnswlib faiss-cpu``).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _ms(samples: Sequence[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:6.2f} ms, p95 {p95 * 1000:6.2f} ms"


def _timed(run: Callable[[], Any], queries: int) -> list[float]:
    spent = []
    for _ in range(queries):
        began = time.perf_counter()
        run()
        spent.append(time.perf_counter() - began)
    return spent


def text(size: int, queries: int) -> None:
    import tantivy

    from esbridge.engines.embedded.analysis import NATIVE

    corpus = [json.loads(line) for line in (SHARED / "beir" / "scifact" / "corpus.jsonl").open()]
    rng = random.Random(3)  # noqa: S311 (a benchmark's sample, not a secret)
    chunks = []
    for i in range(size):
        words = corpus[i % len(corpus)]["text"].split()
        start = rng.randrange(max(1, len(words) - 60))
        chunks.append((corpus[i % len(corpus)]["title"], " ".join(words[start : start + 60])))
    vocabulary = sorted({w for _, body in chunks[:5000] for w in re.findall(r"[a-z]{6,}", body.lower())})
    phrases = [" ".join(rng.sample(vocabulary, 3)) for _ in range(queries)]

    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(Path(folder) / "fts.sqlite3")
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize='porter unicode61')")
        began = time.perf_counter()
        db.executemany("INSERT INTO fts (title, body) VALUES (?, ?)", chunks)
        db.commit()
        built = time.perf_counter() - began

        def fts5(phrase: str) -> None:
            terms = " OR ".join(f'"{word}"' for word in phrase.split())
            db.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 10", (terms,)).fetchall()

        spent = [t for phrase in phrases for t in _timed(functools.partial(fts5, phrase), 1)]
        print(f"FTS5     {size:,} chunks: build {built:5.1f} s; 3-word query {_ms(spent)}")

        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("row", indexed=True, fast=True)
        builder.add_text_field("title", tokenizer_name="esbridge_english", index_option="freq")
        builder.add_text_field("body", tokenizer_name="esbridge_english", index_option="freq")
        schema = builder.build()
        (Path(folder) / "tantivy").mkdir()
        index = tantivy.Index(schema, path=str(Path(folder) / "tantivy"))
        index.register_tokenizer("esbridge_english", NATIVE["esbridge_english"])
        began = time.perf_counter()
        writer = index.writer(heap_size=256_000_000)
        for row, (title, body) in enumerate(chunks):
            writer.add_document(tantivy.Document.from_dict({"row": [row], "title": [title], "body": [body]}, schema))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        built = time.perf_counter() - began
        searcher = index.searcher()
        analyzer = NATIVE["esbridge_english"]

        def tantivy_search(phrase: str) -> None:
            parts = [
                (tantivy.Occur.Should, tantivy.Query.term_query(schema, field, token, index_option="freq"))
                for field in ("title", "body")
                for token in analyzer.analyze(phrase)
            ]
            hits = searcher.search(tantivy.Query.boolean_query(parts), limit=10).hits
            searcher.fast_field_values("row", [address for _, address in hits])

        spent = [t for phrase in phrases for t in _timed(functools.partial(tantivy_search, phrase), 1)]
        print(f"tantivy  {size:,} chunks: build {built:5.1f} s; 3-word query {_ms(spent)}")


def _clustered(size: int, dimension: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(7).standard_normal((2000, dimension)).astype(np.float32)
    points = centres[rng.integers(0, 2000, size)] + 0.6 * rng.standard_normal((size, dimension)).astype(np.float32)
    unit: npt.NDArray[np.float32] = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _usearch_top10(graph: Any, query: npt.NDArray[np.float32]) -> list[int]:
    keys: list[int] = graph.search(query, 10).keys.tolist()
    return keys


def vectors(size: int, queries: int, dimension: int) -> None:
    import os
    import resource

    data = _clustered(size, dimension, 1)
    asked = _clustered(queries, dimension, 2)
    similarity = asked @ data.T
    truth = [set(np.argpartition(-row, 10)[:10].tolist()) for row in similarity]

    Search = Callable[[npt.NDArray[np.float32]], list[int]]

    def report(name: str, built: float, memory_mb: float, search: Search) -> None:
        found, spent = [], []
        for q in asked:
            began = time.perf_counter()
            found.append(search(q))
            spent.append(time.perf_counter() - began)
        recall = statistics.mean(len(set(f) & t) / 10 for f, t in zip(found, truth, strict=True))
        print(f"{name:34} build {built:6.1f} s ({size / built:7,.0f}/s), ~{memory_mb:5,.0f} MB, "
              f"recall@10 {recall:.3f}, query {_ms(spent)}", flush=True)  # fmt: skip

    from usearch.index import Index

    keys = np.arange(size, dtype=np.uint64)
    for dtype, expansion in (("f16", 128), ("f16", 64), ("bf16", 64), ("i8", 64)):
        graph = Index(ndim=dimension, metric="cos", dtype=dtype, connectivity=16, expansion_add=expansion,
                      expansion_search=96)  # fmt: skip
        began = time.perf_counter()
        graph.add(keys, data)
        built = time.perf_counter() - began
        search: Search = functools.partial(_usearch_top10, graph)
        report(f"usearch {dtype} M=16 ef_add={expansion}", built, graph.memory_usage / 1e6, search)
        if dtype == "f16" and expansion == 64:
            allowed = keys[::100]
            began = time.perf_counter()
            for q in asked:
                vectors_ = np.asarray(graph.get(allowed), dtype=np.float32)
                np.argpartition(-(vectors_ @ q), 10)[:10]
            each = (time.perf_counter() - began) / queries * 1000
            print(f"{'  1% filter, exact over allowed':34} {each:.2f} ms/query")
    try:
        import hnswlib  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        print("hnswlib: not installed")
    else:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        index = hnswlib.Index(space="cosine", dim=dimension)
        index.init_index(max_elements=size, M=16, ef_construction=64)
        index.set_num_threads(os.cpu_count() or 1)
        began = time.perf_counter()
        index.add_items(data, np.arange(size))
        built = time.perf_counter() - began
        index.set_ef(96)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        report("hnswlib f32 M=16 ef_c=64", built, grown, lambda q: index.knn_query(q, k=10)[0][0].tolist())
        del index
    try:
        import faiss  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        print("faiss-cpu: not installed")
    else:
        flat = faiss.IndexHNSWFlat(dimension, 16, faiss.METRIC_INNER_PRODUCT)
        flat.hnsw.efConstruction = 64
        began = time.perf_counter()
        flat.add(data)
        built = time.perf_counter() - began
        flat.hnsw.efSearch = 96
        memory = size * (dimension * 4 + 16 * 2 * 4 * 1.1) / 1e6
        report("faiss HNSWFlat f32 M=16 ef_c=64", built, memory, lambda q: flat.search(q[None, :], 10)[1][0].tolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["text", "vectors"])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dimension", type=int, default=384)
    args = parser.parse_args()
    if args.what == "text":
        text(args.size, args.queries)
    else:
        vectors(args.size, args.queries, args.dimension)


if __name__ == "__main__":
    main()
