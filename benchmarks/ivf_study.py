"""An IVF index (faiss-cpu) against the embedded engine's usearch graph: build, recall, latency, filters, QPS.

    flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/ivf_study.py --size 1000000 \
        --f32 /tmp/emb-b1m-v3/vectors/1.vector.f32 --graph /tmp/emb-b1m-v3/vectors/1.vector.usearch \
        --variants usearch ivf-flat:1024 ivf-sq8:1024 ivf-sq8:4096 --nprobe 4 8 16 32 64 128
    flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/ivf_study.py --size 1000000 \
        --f32 /tmp/emb-b1m-v3/vectors/1.vector.f32 --variants ivf-sq8-hnsw:4096 --nprobe 4 8 16 32 64 128
    flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/ivf_study.py --size 1000000 \
        --f32 /tmp/emb-b1m-v3/vectors/1.vector.f32 --variants usearch
    HF_HUB_OFFLINE=1 flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/ivf_study.py \
        --scifact eval-scifact-v1 --variants usearch ivf-flat:32 ivf-sq8:32 ivf-flat:128 ivf-sq8:128 \
        --nprobe 1 2 4 8 16 32 --train 20000 --queries 300 --extra 2000 --remove 100
    HF_HUB_OFFLINE=1 flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/ivf_study.py \
        --scifact eval-scifact-v1 --scifact-size 3000 --variants ivf-flat:31 --nprobe 1 2 4 8 16 32 --queries 300
    .venv/bin/python benchmarks/ivf_study.py --size 50000 --variants usearch ivf-sq8:256 --nprobe 4 16  # a try

faiss-cpu is not one of esbridge's dependencies: install it by hand (``pip install faiss-cpu``).

Vectors: ``bench_embedded``'s synthetic clustered 384-d unit vectors (same seeds, keys = chunk number + 1),
read from an engine's float32 copies with ``--f32`` (rows 1..size of that sparse file, opened read-only) or
generated; or, with ``--scifact INDEX``, the chunk vectors of an OpenSearch index (read with a scroll; the
index is only read) and SciFact's own queries embedded by the index's model (BAAI/bge-small-en-v1.5, ONNX
int8, its query prompt). Ground truth: the exact top 10 by brute force (inner product of unit vectors).

Variants: ``usearch`` is the engine's graph (int8, cosine, M 24, 64 build candidates, searched
``--widths`` wide), built here, or loaded from ``--graph`` (an engine's file, opened read-only and changed
only in memory); ``ivf-flat:NLIST`` and ``ivf-sq8:NLIST`` are faiss IndexIVFFlat and IndexIVFScalarQuantizer
(QT_8bit), inner product, the coarse quantizer trained on ``--train`` vectors drawn from the set;
``ivf-sq8-hnsw:NLIST`` finds the lists through an HNSW graph of the centroids (faiss ``IVF{nlist}_HNSW32,SQ8``,
k-means by exact assignment) instead of comparing each vector with every centroid. Every search asks for
``--rescore`` candidates and ranks them by the float32 vectors, as the engine does.

Per variant: training time, add rate (``BATCH`` vectors per call; faiss on ``--add-threads``, default all
cores) and CPU per vector, resident memory growth, file size, save and load time; recall@10 (the index's own
top 10 and after re-scoring) and latency p50/p95 one query at a time per nprobe (faiss's OpenMP threads set to
1 for every search); ``--filters`` allowing 1% and 10% of the rows (keys divisible by 100 or 10; faiss
``IDSelectorBitmap`` through ``SearchParametersIVF`` at each nprobe; usearch as the engine meets them: up to
5% of the rows an exact scan of their vectors kept in memory, more a graph search widened until enough pass);
for usearch, a numpy scan of 10,000 vectors alone and right after a graph search; whether a search lets other
Python threads run (one thread spins while another searches); queries/s from 1 and ``--concurrency`` Python
threads, the library alone and with re-scoring, with the cores kept busy (process CPU seconds per second);
then ``--extra`` more vectors added and ``--remove`` keys removed in one call (for faiss also with a hash
table from key to list). Each figure is printed with the load average beside it.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import re
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss as _faiss  # type: ignore[import-untyped,import-not-found,unused-ignore]
import numpy as np
import numpy.typing as npt
from bench_embedded import BATCH, Vectors
from usearch.index import Index

faiss: Any = _faiss  # (its stubs lack much of what is used here)
SCRATCH = Path(tempfile.gettempdir()) / "ivf-study"
Floats = npt.NDArray[np.float32]
Keys = npt.NDArray[np.int64]
Search = Callable[[Floats, int], Keys]


def _load() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]


def _ms(samples: Sequence[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def _unit(matrix: Floats) -> Floats:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Floats = (matrix / norms).astype(np.float32)
    return unit


@dataclass
class Data:
    base: Floats  # unit vectors; row i has key i + 1
    queries: Floats
    label: str

    @property
    def keys(self) -> Keys:
        return np.arange(1, len(self.base) + 1, dtype=np.int64)


def synthetic(size: int, queries: int, f32: Path | None) -> Data:
    vectors = Vectors(384)
    if f32 is not None:
        with f32.open("rb") as file:  # read-only: rows 1..size of the engine's copies
            file.seek(384 * 4)
            raw = np.frombuffer(file.read(size * 384 * 4), dtype=np.float32)
        base = _unit(raw.reshape(size, 384))
        label = f"{size:,} synthetic vectors from {f32}"
    else:
        base = np.concatenate(list(vectors.batches(size)))
        label = f"{size:,} synthetic vectors, generated"
    return Data(base, vectors.queries(queries), label)


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})  # noqa: S310
    with urllib.request.urlopen(request) as response:  # noqa: S310 (the --url given)
        return json.load(response)


def scifact(index: str, queries: int, url: str, size: int | None) -> Data:
    found: list[list[float]] = []
    page = _post(f"{url}/{index}/_search?scroll=2m", {"size": 2000, "_source": ["vector"], "sort": ["_doc"]})
    while page["hits"]["hits"]:
        found.extend(hit["_source"]["vector"] for hit in page["hits"]["hits"] if "vector" in hit["_source"])
        page = _post(f"{url}/_search/scroll", {"scroll": "2m", "scroll_id": page["_scroll_id"]})
    from esbridge.config.embedding import EmbeddingSettings
    from esbridge.embeddings.base import embed_queries
    from esbridge.embeddings.factory import load_model

    data = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "beir" / "scifact" / "queries.jsonl"
    if not data.exists():
        data = Path("/work/shared/data/beir/scifact/queries.jsonl")
    texts = [json.loads(line)["text"] for line in data.read_text().splitlines()[:queries]]
    model = load_model(EmbeddingSettings(model="BAAI/bge-small-en-v1.5", backend="onnx", precision="int8"))
    vectors = _unit(np.asarray(embed_queries(model, texts), dtype=np.float32))
    base = _unit(np.asarray(found[:size], dtype=np.float32))
    return Data(base, vectors, f"{len(base):,} SciFact chunk vectors of {index}, {len(texts)} SciFact queries")


def exact(base: Floats, queries: Floats, allowed: npt.NDArray[np.bool_] | None = None) -> list[set[int]]:
    """The keys of the exact top 10 of each query (among ``allowed`` rows)."""
    scores = np.empty((len(queries), 0), dtype=np.float32)
    rows = np.empty((len(queries), 0), dtype=np.int64)
    positions = np.flatnonzero(allowed) if allowed is not None else None
    step = 100_000
    total = len(base) if positions is None else len(positions)
    for start in range(0, total, step):
        part = np.arange(start, min(total, start + step)) if positions is None else positions[start : start + step]
        similarity = queries @ base[part].T
        scores = np.concatenate([scores, similarity], axis=1)
        rows = np.concatenate([rows, np.broadcast_to(part, similarity.shape)], axis=1)
        keep = np.argpartition(-scores, 9, axis=1)[:, :10]
        scores = np.take_along_axis(scores, keep, axis=1)
        rows = np.take_along_axis(rows, keep, axis=1)
    return [{int(r) + 1 for r in line} for line in rows]


class Study:
    def __init__(self, data: Data, args: argparse.Namespace) -> None:
        self.data = data
        self.args = args
        self.truth = exact(data.base, data.queries)
        self.filters = {share: data.keys % (100 // share) == 0 for share in args.filters}  # % of rows allowed
        self.filtered_truth = {share: exact(data.base, data.queries, mask) for share, mask in self.filters.items()}
        rng = np.random.default_rng(11)
        picks = rng.integers(0, len(data.base), args.extra)
        noise = 0.05 * rng.standard_normal((args.extra, data.base.shape[1])).astype(np.float32)
        self.extra = _unit(data.base[picks] + noise)
        SCRATCH.mkdir(exist_ok=True)

    def rescored(self, query: Floats, keys: Keys) -> Keys:
        keys = keys[(keys > 0) & (keys <= len(self.data.base))]
        if not self.args.rescore:
            return keys[:10]
        scores = self.data.base[keys - 1] @ query
        return keys[np.argsort(-scores)[:10]]

    def recall(self, label: str, search: Search, truth: list[set[int]] | None = None) -> float:
        truth = truth or self.truth
        pool = max(10, self.args.rescore)
        own, kept, spent, short = [], [], [], 0
        for q, query in enumerate(self.data.queries):
            began = time.perf_counter()
            keys = search(query, pool)
            top = self.rescored(query, keys)
            spent.append(time.perf_counter() - began)
            short += len(top) < 10
            own.append(len(set(keys[:10].tolist()) & truth[q]) / 10)
            kept.append(len(set(top.tolist()) & truth[q]) / 10)
        shortfall = f", fewer than 10 for {short} of {len(kept)} queries" if short else ""
        print(
            f"  {label}: recall@10 {statistics.mean(own):.3f} own, {statistics.mean(kept):.3f} re-scored "
            f"{self.args.rescore}; {_ms(spent)} (one query at a time, re-scoring included){shortfall}; {_load()}",
            flush=True,
        )
        return statistics.mean(kept)

    def throughput(self, label: str, search: Search, rescore: bool = True) -> None:
        """Searches/s from 1 and ``--concurrency`` threads: each asks for the candidates and, with ``rescore``,
        ranks them by the float32 vectors (the library alone without it)."""
        pool = max(10, self.args.rescore)
        label = f"{label}, {'re-scored' if rescore else 'the library alone'}"
        queries = self.data.queries
        rates = []
        for concurrency in (1, self.args.concurrency):
            done = 0
            lock = threading.Lock()
            stop = time.perf_counter() + self.args.seconds

            def work(
                worker: int, concurrency: int = concurrency, stop: float = stop, lock: threading.Lock = lock
            ) -> None:
                nonlocal done
                i = worker
                while time.perf_counter() < stop:
                    query = queries[i % len(queries)]
                    found = search(query, pool)
                    if rescore:
                        self.rescored(query, found)
                    i += concurrency
                    with lock:
                        done += 1

            cpu = time.process_time()
            with ThreadPoolExecutor(concurrency) as threads:
                list(threads.map(work, range(concurrency)))
            busy = (time.process_time() - cpu) / self.args.seconds
            rates.append(done / self.args.seconds)
            print(f"  {label}, concurrency {concurrency}: {rates[-1]:,.0f}/s, {busy:.2f} cores busy; {_load()}")
        print(f"  {label}: concurrency {self.args.concurrency} / 1 = {rates[1] / rates[0]:.2f}x", flush=True)

    def adding(self, label: str, add: Callable[[Keys, Floats], object], first: int) -> None:
        keys = np.arange(first, first + len(self.extra), dtype=np.int64)
        began, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(keys), BATCH):
            add(keys[start : start + BATCH], self.extra[start : start + BATCH])
        wall, used = time.perf_counter() - began, time.process_time() - cpu
        print(
            f"  {label}: {len(keys):,} more added after the build, {BATCH} a call: {len(keys) / wall:,.0f}/s, "
            f"{used / len(keys) * 1e6:.0f} us CPU per vector; {_load()}",
            flush=True,
        )

    def gil_probe(self, label: str, long_search: Callable[[], object]) -> None:
        """Whether a search lets other Python threads run: this thread spins in Python while another runs
        five long searches; if the library kept Python's lock, this thread would get almost no CPU."""
        began = time.perf_counter()
        long_search()
        alone = time.perf_counter() - began
        done = threading.Event()

        def worker() -> None:
            for _ in range(5):
                long_search()
            done.set()

        thread = threading.Thread(target=worker)
        cpu, began = time.thread_time(), time.perf_counter()
        thread.start()
        spins = 0
        while not done.is_set():
            spins += 1
        wall, mine = time.perf_counter() - began, time.thread_time() - cpu
        thread.join()
        print(
            f"  {label}: while another thread ran 5 searches of {alone * 1000:.0f} ms, this thread's Python had "
            f"{mine / wall:.0%} of a core ({spins:,} turns); {_load()}",
            flush=True,
        )

    def scan_after_search(self, graph: Index) -> None:
        """A numpy product of 10,000 x 384 (the engine's exact scan of a small allowed set) alone, and right
        after a graph search with usearch's default threads and with one thread."""
        unit = self.data.base[: min(10_000, len(self.data.base))].copy()
        before: Callable[[Floats], object] | None
        for label, before in (
            ("alone", None),
            ("right after a graph search", lambda query: graph.search(query, 100)),
            ("right after a graph search with threads=1", lambda query: graph.search(query, 100, threads=1)),
        ):
            spent = []
            for query in self.data.queries:
                if before is not None:
                    before(query)
                began = time.perf_counter()
                similarity = unit @ query
                np.argpartition(-similarity, 99)
                spent.append(time.perf_counter() - began)
            print(f"  a scan of {len(unit):,} vectors {label}: {_ms(spent)}; {_load()}", flush=True)

    def removing(self, label: str, remove: Callable[[Keys], object]) -> None:
        rng = np.random.default_rng(len(label))  # other keys for each call
        for count in (1, self.args.remove):
            keys = rng.choice(self.data.keys, count, replace=False)
            began, cpu = time.perf_counter(), time.process_time()
            remove(keys)
            wall, used = time.perf_counter() - began, time.process_time() - cpu
            print(
                f"  {label}: {count:,} removed in one call: {wall * 1000:.1f} ms ({used * 1000:.1f} ms CPU); {_load()}"
            )

    def filtered_like_the_engine(self, label: str, graph: Index) -> None:
        """Filters met as the engine meets them: an allowed set up to 5% of the rows (or 10,000) scanned whole
        from vectors kept in memory, a larger one by a graph search widened until enough pass."""
        size = len(self.data.base)
        for share, mask in self.filters.items():
            rows = np.flatnonzero(mask)
            keys = rows.astype(np.int64) + 1
            search: Search
            if len(rows) <= max(10_000, size // 20):
                unit = self.data.base[rows]

                def scan(query: Floats, k: int, unit: Floats = unit, keys: Keys = keys) -> Keys:
                    similarity = unit @ query
                    top = np.argpartition(-similarity, min(k, len(keys)) - 1)[:k]
                    return keys[top[np.argsort(-similarity[top])]]

                search = scan
                how = "exact scan"
            else:

                def widened(query: Floats, k: int, mask: npt.NDArray[np.bool_] = mask, share: int = share) -> Keys:
                    wanted = min(size, k * 100 // share * 2 + k)
                    while True:
                        found = np.asarray(graph.search(query, wanted).keys, dtype=np.int64)
                        found = found[(found > 0) & (found <= size)]
                        found = found[mask[found - 1]]
                        if len(found) >= k or wanted >= size:
                            return found[:k]
                        wanted = min(size, wanted * 4)

                search = widened
                how = "graph search widened"
            self.recall(f"{label}, {share}% filter ({len(rows):,} rows) by {how}", search, self.filtered_truth[share])


def run_usearch(study: Study, args: argparse.Namespace) -> None:
    data = study.data
    rss = _rss_mb()
    graph = Index(ndim=384, metric="cos", dtype="i8", connectivity=24, expansion_add=64, expansion_search=512)
    if args.graph is not None:
        began = time.perf_counter()
        graph.load(str(args.graph))  # into memory; the file is not written
        print(
            f"usearch, the engine's graph {args.graph} ({len(graph):,} vectors, "
            f"{args.graph.stat().st_size / 1e6:,.0f} MB): loaded in {time.perf_counter() - began:.2f} s, "
            f"RSS +{_rss_mb() - rss:,.0f} MB; {_load()}",
            flush=True,
        )
        label = "usearch (engine's graph)"
    else:
        keys = data.keys.astype(np.uint64)
        began, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(keys), BATCH):
            graph.add(keys[start : start + BATCH], data.base[start : start + BATCH])
        wall, used = time.perf_counter() - began, time.process_time() - cpu
        print(
            f"usearch i8 M 24, 64 build candidates, {len(keys):,} vectors: built in {wall:.1f} s, "
            f"{len(keys) / wall:,.0f}/s, {used / len(keys) * 1e6:.0f} us CPU per vector, "
            f"RSS +{_rss_mb() - rss:,.0f} MB; {_load()}",
            flush=True,
        )
        path = SCRATCH / "study.usearch"
        began = time.perf_counter()
        graph.save(str(path))
        saved = time.perf_counter() - began
        began = time.perf_counter()
        reopened = Index.restore(str(path))
        print(
            f"  saved in {saved:.2f} s ({path.stat().st_size / 1e6:,.0f} MB), loaded in "
            f"{time.perf_counter() - began:.2f} s",
            flush=True,
        )
        del reopened
        path.unlink()
        label = "usearch"

    def search(query: Floats, k: int) -> Keys:
        return np.asarray(graph.search(query, k).keys, dtype=np.int64)

    for width in args.widths:
        graph.expansion_search = width  # type: ignore[misc]
        study.recall(f"{label}, width {width}", search, study.truth)
    graph.expansion_search = 512  # type: ignore[misc]
    study.filtered_like_the_engine(label, graph)
    study.scan_after_search(graph)
    query = data.queries[0]
    study.gil_probe(f"{label}, exact search", lambda: graph.search(query, 100, exact=True))
    study.throughput(f"{label}, width 512", search, rescore=False)
    study.throughput(f"{label}, width 512", search)
    study.adding(label, lambda keys, vectors: graph.add(keys.astype(np.uint64), vectors), 2_000_000_000)
    study.removing(label, lambda keys: graph.remove(keys.astype(np.uint64)))


def run_ivf(study: Study, args: argparse.Namespace, variant: str) -> None:
    kind, _, nlist_text = variant.partition(":")
    nlist = int(nlist_text)
    data = study.data
    faiss.omp_set_num_threads(args.add_threads)
    rss = _rss_mb()
    if kind in ("ivf-flat", "ivf-sq8"):
        quantizer = faiss.IndexFlatIP(384)
        if kind == "ivf-flat":
            index = faiss.IndexIVFFlat(quantizer, 384, nlist, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexIVFScalarQuantizer(
                quantizer, 384, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
    elif kind == "ivf-sq8-hnsw":  # the lists found through an HNSW graph of the centroids, not a scan of them
        index = faiss.index_factory(384, f"IVF{nlist}_HNSW32,SQ8", faiss.METRIC_INNER_PRODUCT)
        index.clustering_index = faiss.IndexFlatIP(384)  # k-means by exact assignment
        faiss.downcast_index(index.quantizer).hnsw.efSearch = 16  # adds need the nearest list only
    else:
        raise SystemExit(f"unknown variant {variant}")
    rng = np.random.default_rng(5)
    sample = data.base[rng.choice(len(data.base), min(args.train, len(data.base)), replace=False)]
    began, cpu = time.perf_counter(), time.process_time()
    index.train(sample)
    trained, train_cpu = time.perf_counter() - began, time.process_time() - cpu
    keys = data.keys
    began, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(keys), BATCH):
        index.add_with_ids(data.base[start : start + BATCH], keys[start : start + BATCH])
    wall, used = time.perf_counter() - began, time.process_time() - cpu
    print(
        f"{variant}, {len(keys):,} vectors: trained on {len(sample):,} in {trained:.1f} s ({train_cpu:.1f} s CPU); "
        f"added in {wall:.1f} s, {len(keys) / wall:,.0f}/s, {used / len(keys) * 1e6:.0f} us CPU per vector; "
        f"RSS +{_rss_mb() - rss:,.0f} MB; {_load()}",
        flush=True,
    )
    path = SCRATCH / "study.faiss"
    began = time.perf_counter()
    faiss.write_index(index, str(path))
    saved = time.perf_counter() - began
    began = time.perf_counter()
    reopened = faiss.read_index(str(path))
    print(
        f"  saved in {saved:.2f} s ({path.stat().st_size / 1e6:,.0f} MB), "
        f"loaded in {time.perf_counter() - began:.2f} s",
        flush=True,
    )
    del reopened
    path.unlink()
    faiss.omp_set_num_threads(1)
    if kind == "ivf-sq8-hnsw":
        faiss.downcast_index(index.quantizer).hnsw.efSearch = max(64, 2 * max(args.nprobe))
    bitmaps = {
        share: np.packbits(np.concatenate([[False], mask]), bitorder="little") for share, mask in study.filters.items()
    }
    selectors = {
        share: faiss.IDSelectorBitmap(len(bitmap) * 8, faiss.swig_ptr(bitmap)) for share, bitmap in bitmaps.items()
    }
    best = args.nprobe[-1]
    for nprobe in args.nprobe:
        params = faiss.SearchParametersIVF(nprobe=nprobe)

        def search(query: Floats, k: int, params: Any = params) -> Keys:
            _, found = index.search(query[None, :], k, params=params)
            return np.asarray(found[0], dtype=np.int64)

        if study.recall(f"{variant}, nprobe {nprobe}", search) >= args.target and best == args.nprobe[-1]:
            best = nprobe
    for share, nprobe in itertools.product(selectors, args.nprobe):
        params = faiss.SearchParametersIVF(nprobe=nprobe, sel=selectors[share])

        def search(query: Floats, k: int, params: Any = params) -> Keys:
            _, found = index.search(query[None, :], k, params=params)
            return np.asarray(found[0], dtype=np.int64)

        truth = study.filtered_truth[share]
        study.recall(f"{variant}, nprobe {nprobe}, {share}% filter (IDSelectorBitmap)", search, truth)
    params = faiss.SearchParametersIVF(nprobe=best)

    def served(query: Floats, k: int) -> Keys:
        _, found = index.search(query[None, :], k, params=params)
        return np.asarray(found[0], dtype=np.int64)

    everything = faiss.SearchParametersIVF(nprobe=nlist)
    query = data.queries[:1]
    study.gil_probe(f"{variant}, nprobe {nlist} (all)", lambda: index.search(query, 100, params=everything))
    study.throughput(f"{variant}, nprobe {best}", served, rescore=False)
    study.throughput(f"{variant}, nprobe {best}", served)
    faiss.omp_set_num_threads(args.add_threads)
    if kind == "ivf-sq8-hnsw":
        faiss.downcast_index(index.quantizer).hnsw.efSearch = 16
    study.adding(variant, lambda keys, vectors: index.add_with_ids(vectors, keys), 2_000_000_000)
    study.removing(variant, lambda keys: index.remove_ids(keys))
    index.set_direct_map_type(faiss.DirectMap.Hashtable)
    study.removing(f"{variant} with a hash table from key to list", lambda keys: index.remove_ids(keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--f32", type=Path, help="an engine's float32 copies of bench_embedded's vectors")
    parser.add_argument("--graph", type=Path, help="an engine's usearch graph of the same vectors, instead of building")
    parser.add_argument("--scifact", help="an OpenSearch index of SciFact chunks with their vectors, instead")
    parser.add_argument("--scifact-size", type=int, help="only the first so many of those vectors")
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--variants", nargs="+", default=["usearch", "ivf-flat:1024", "ivf-sq8:1024"])
    parser.add_argument("--nprobe", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--add-threads", type=int, default=os.cpu_count() or 1, help="faiss's threads to train and add")
    parser.add_argument("--train", type=int, default=100_000, help="vectors the coarse quantizer is trained on")
    parser.add_argument("--rescore", type=int, default=100, help="candidates re-scored from float32")
    parser.add_argument("--target", type=float, default=0.95, help="recall@10 the QPS run's nprobe must reach")
    parser.add_argument("--filters", type=int, nargs="+", default=[1, 10], help="%% of the rows a filter allows")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--extra", type=int, default=10_000, help="vectors added after the build")
    parser.add_argument("--remove", type=int, default=1000, help="keys removed in one call")
    args = parser.parse_args()
    if args.scifact:
        data = scifact(args.scifact, args.queries, args.url, args.scifact_size)
    else:
        data = synthetic(args.size, args.queries, args.f32)
    began = time.perf_counter()
    study = Study(data, args)
    print(
        f"{data.label}; {len(data.queries)} queries; exact top 10s in {time.perf_counter() - began:.1f} s; "
        f"faiss {faiss.__version__}; RSS {_rss_mb():,.0f} MB; {_load()}",
        flush=True,
    )
    for variant in args.variants:
        if variant == "usearch":
            run_usearch(study, args)
        else:
            run_ivf(study, args, variant)
        gc.collect()


if __name__ == "__main__":
    main()
