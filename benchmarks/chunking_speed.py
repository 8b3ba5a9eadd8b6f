"""How long chunking takes (the ingest defaults: 200 tokens, overlap 32, min 24, the approximate counter).

    PYTHONPATH=. .venv/bin/python benchmarks/chunking_speed.py
    PYTHONPATH=. .venv/bin/python benchmarks/chunking_speed.py --only scifact vault

Inputs: one line of bare words (no punctuation, no line break) of 1 MB and of 6 MB, the SciFact corpus and
the Dendron vault (read before the clock starts). Each prints its size, chunks, the median and fastest of
``--repeat`` runs in seconds and a digest of the chunk ids and content hashes, so runs of two versions of
esbridge show they cut the same chunks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.chunking import chunk_document
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Section

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
VOCABULARY = ["protein", "cell", "expression", "of", "the", "in", "patients", "with", "increased", "risk", "mice"]


def bare_words(size: int) -> list[Document]:
    rng = random.Random(size)  # noqa: S311
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(VOCABULARY))
        length += len(words[-1]) + 1
    return [Document(doc_id=f"bare-{size}", title="", sections=(Section(" ".join(words)),))]


def documents(items: Iterable[object]) -> list[Document]:
    return [item for item in items if isinstance(item, Document)]


INPUTS: dict[str, Callable[[Path], list[Document]]] = {
    "bare-1mb": lambda _: bare_words(1_000_000),
    "bare-6mb": lambda _: bare_words(6_000_000),
    "scifact": lambda data: documents(read_beir_corpus(data / "beir" / "scifact")),
    "vault": lambda data: documents(read_vault(data / "vault" / "dendron-site" / "vault")),
}


def measure(name: str, docs: list[Document], repeat: int) -> dict[str, object]:
    times: list[float] = []
    for _ in range(repeat):
        digest = hashlib.sha256()
        chunks = 0
        started = time.perf_counter()
        for doc in docs:
            for chunk in chunk_document(doc, max_tokens=200, overlap_tokens=32, min_tokens=24):
                digest.update(f"{chunk.chunk_id}\t{chunk.content_hash}\n".encode())
                chunks += 1
        times.append(time.perf_counter() - started)
    size = sum(len(section.text.encode()) for doc in docs for section in doc.sections)
    return {
        "input": name,
        "mb": round(size / 1e6, 2),
        "chunks": chunks,
        "seconds_median": round(statistics.median(times), 3),
        "seconds_min": round(min(times), 3),
        "digest": digest.hexdigest()[:16],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(INPUTS), default=list(INPUTS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per input; the median and the fastest are shown")
    parser.add_argument("--data", type=Path, default=SHARED, help="the shared data folder (default: %(default)s)")
    args = parser.parse_args()
    for name in args.only:
        print(json.dumps(measure(name, INPUTS[name](args.data), args.repeat)), flush=True)


if __name__ == "__main__":
    main()
