"""kNN searches whose float32 copies have left the page cache: the engine's reads (rows still to read asked of the
kernel at once after one read waited) against reading row by row, alternated in one process on a data directory
``bench_embedded.py`` left. Needs root: before each turn it writes ``1`` to ``/proc/sys/vm/drop_caches``.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/emb-b1m --queries 100
    sudo .venv/bin/python benchmarks/cold_reads.py --folder /tmp/emb-b1m

Every turn searches queries no earlier turn searched (drawn around the data's own clusters, as
``bench_embedded.py``'s are), so none finds its rows cached by another. The reads must give the same answers
(checked first on 20 queries, warm; the engine's also with every read counted as one that waited).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bench_embedded import ALIAS, Vectors, _load, _ms
from rescore_reads import Read, same_answers

from esbridge.blas import limit_blas_threads
from esbridge.engines.embedded import EmbeddedEngine, floats
from esbridge.query import bodies
from esbridge.query.models import Filters

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def row_by_row(copies: floats.FloatCopies, rows: Sequence[int]) -> npt.NDArray[np.float32]:
    """The engine's reads without asking ahead."""
    width = copies.dimension * 4
    found = np.zeros((len(rows), copies.dimension), dtype=np.float32)
    fd = os.open(copies.path, os.O_RDONLY)
    try:
        for position, row in enumerate(rows):
            part = os.pread(fd, width, row * width)
            if len(part) == width:
                found[position] = np.frombuffer(part, dtype=np.float32)
    finally:
        os.close(fd)
    return found


def drop_page_cache() -> None:
    os.sync()
    try:
        DROP_CACHES.write_text("1\n")
    except OSError as exc:
        raise SystemExit(f"cannot empty the page cache ({DROP_CACHES}: {exc}); run as root") from exc


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4, help="turns of each read")
    parser.add_argument("--queries", type=int, default=100, help="new queries a turn")
    args = parser.parse_args()
    limit_blas_threads()
    reads: dict[str, Read] = {"the engine's": floats.FloatCopies.read, "row by row": row_by_row}
    queries = Vectors(384).queries(20 + args.rounds * len(reads) * args.queries)  # the data's clusters
    engine = EmbeddedEngine(args.folder)

    def knn(i: int) -> dict[str, object]:
        return bodies.knn_body("opensearch", queries[i].tolist(), k=10, filters=Filters(), num_candidates=100)

    asking_now = floats.FROM_DISK_NS
    floats.FROM_DISK_NS = -1  # the check also covers the engine's reads that ask ahead
    same_answers(engine, {**reads, "the engine's, asking ahead": floats.FloatCopies.read}, knn)
    floats.FROM_DISK_NS = asking_now
    times: dict[str, list[float]] = {name: [] for name in reads}
    following = 20
    for turn in range(args.rounds):
        for name in list(reads) if turn % 2 == 0 else list(reversed(reads)):
            floats.FloatCopies.read = reads[name]  # type: ignore[method-assign,assignment]
            drop_page_cache()
            taken = []
            for i in range(following, following + args.queries):
                started = time.perf_counter()
                engine.search(ALIAS, knn(i))
                taken.append(time.perf_counter() - started)
            following += args.queries
            times[name].extend(taken)
            print(f"turn {turn} {name}: {_ms(taken)}; {_load()}", flush=True)
    for name, taken in times.items():
        print(f"{name}, every turn: {_ms(taken)}")
    engine.close()


if __name__ == "__main__":
    main()
