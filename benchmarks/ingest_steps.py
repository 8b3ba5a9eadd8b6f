"""The CPU per chunk of each Python step of the embedded engine's write path, on 2,000 of ``bench_embedded``'s chunks.

    .venv/bin/python benchmarks/ingest_steps.py --folder /tmp/emb-steps

Each step runs over the 2,000 chunks ``--repeat`` times and the best run is printed (the writing thread's CPU, so
other threads and processes count less): the mapping check, the store's statements (SQLite's work included; the
transaction is undone each time), tantivy's document, and the rows tantivy and the graph read back from the
database after the write.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_embedded import ALIAS, Vectors, chunk, texts

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.lexical_layout import Layout
from esbridge.engines.embedded.values import without_path
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

COUNT = 2000


class _Undo(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    shutil.rmtree(args.folder, ignore_errors=True)
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    rng = random.Random(11)  # noqa: S311
    vectors = next(Vectors(384).batches(COUNT))
    docs = [{**chunk(i, corpus, vocabulary, rng), "vector": v.tolist()} for i, v in enumerate(vectors)]
    engine = EmbeddedEngine(args.folder)
    IndexManager(engine, ALIAS, IndexParameters(dimension=384, analysis="full")).create()
    engine.bulk(ALIAS, [BulkAction("index", f"c{i}", doc) for i, doc in enumerate(docs)])
    store = engine._store
    record = store.index(store.alias_targets(ALIAS)[0][0])
    assert record is not None
    schema, layout = record.schema, Layout(record.schema)
    sources = [without_path(doc, ["vector"]) for doc in docs]
    rows = [row for (row,) in store.db.execute("SELECT row FROM docs WHERE index_id = ?", (record.id,))]

    def best(step: Callable[[], Any]) -> float:
        spent = []
        for _ in range(args.repeat):
            began = time.thread_time()
            step()
            spent.append(time.thread_time() - began)
        return min(spent) / COUNT * 1e6

    def put() -> None:
        try:
            with store.write():
                store.put_documents(record, schema, [(f"c{i}", doc) for i, doc in enumerate(docs)])
                raise _Undo
        except _Undo:
            pass

    def check() -> None:
        for doc in docs:
            schema.check(doc)

    steps: dict[str, Callable[[], Any]] = {
        "mapping check": check,
        "store (SQLite included)": put,
        "tantivy document": lambda: [layout.document(i, f"c{i}", source) for i, source in enumerate(sources)],
        "sources for tantivy, read back": lambda: store.hits(rows),
        "vectors for the graph, read back": lambda: store.vector_blobs(rows, "vector"),
    }
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{COUNT:,} chunks, best of {args.repeat}, the writing thread's CPU per chunk (load {load}):")
    for name, step in steps.items():
        print(f"  {name:36s} {best(step):7.1f} us")
    engine.close()


if __name__ == "__main__":
    main()
