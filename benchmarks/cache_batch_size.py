"""Whether the embedding cache may serve a vector embedded at one ``[embedding] batch_size`` to a run at another.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cache_batch_size.py ../shared/data/beir/scifact \
        [--model BAAI/bge-small-en-v1.5] [--precision int8] [--documents 1024] [--queries 200] [--size 32]

With int8 weights ONNX Runtime quantizes activations with one scale per batch, so at a batch size above one a
text's vector depends on the texts batched with it; the cache keeps the first vector a text got. Embeds the
first ``--documents`` titles and abstracts of a BEIR corpus (cut at 150 words, passage prompt) three ways: one
text a call (batch 1, the default), ``--size`` a call in ingest's windows of 512 in corpus order, and ``--size``
a call in windows of 300 of a shuffled order (the same texts, other neighbours). Prints the cosines between
them (what serving across batch sizes changes, beside what the batch size itself already changes from one run
to the next) and the overlap of the kNN top 10 of ``--queries`` queries (embedded alone) over each set, and over
a mixed set: half the texts from batch 1, half from ``--size``, as a cache filled at both sizes gives.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from esbridge.embeddings.base import embed_passages, embed_queries
from esbridge.embeddings.onnx_runtime import OnnxEmbedder

Vectors = NDArray[np.float32]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="BAAI/bge-small-en-v1.5")
    parser.add_argument("--precision", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--documents", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args()

    texts = [
        f"{r['title']}\n{' '.join(r['text'].split()[:150])}"
        for r in _lines(args.dataset / "corpus.jsonl", args.documents)
    ]
    queries = [r["text"] for r in _lines(args.dataset / "queries.jsonl", args.queries)]
    one = OnnxEmbedder(args.model, precision=args.precision, batch_size=1)
    many = OnnxEmbedder(args.model, precision=args.precision, batch_size=args.size)
    try:
        alone = _unit(np.asarray(embed_passages(one, texts)))
        in_order = _unit(_windows(many, texts, list(range(len(texts))), 512))
        shuffled = [int(p) for p in np.random.default_rng(7).permutation(len(texts))]
        other_neighbours = _unit(_windows(many, texts, shuffled, 300))
        asked = _unit(np.asarray(embed_queries(one, queries)))
    finally:
        one.close()
        many.close()
    mixed = np.where((np.arange(len(texts)) % 2 == 0)[:, None], alone, in_order)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"{args.model} {args.precision}, {len(texts)} documents, {len(queries)} queries, batch {args.size}; load {load}"
    )
    pairs = {
        f"batch 1 vs batch {args.size}": (alone, in_order),
        f"batch {args.size} vs batch {args.size}, other neighbours": (in_order, other_neighbours),
        f"batch 1 vs batch {args.size}, other neighbours": (alone, other_neighbours),
        f"half batch 1, half batch {args.size} vs batch {args.size}": (mixed, in_order),
        f"half batch 1, half batch {args.size} vs batch {args.size}, other neighbours": (mixed, other_neighbours),
    }
    for name, (a, b) in pairs.items():
        cosines = np.sum(a * b, axis=1)
        print(
            f"{name}: cosine min {cosines.min():.5f}, 1st percentile {np.percentile(cosines, 1):.5f}, "
            f"mean {cosines.mean():.5f}; top-10 overlap {_overlap(asked, a, b):.4f}"
        )


def _lines(path: Path, count: int) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for _, line in zip(range(count), lines, strict=False)]


def _windows(model: OnnxEmbedder, texts: Sequence[str], order: Sequence[int], window: int) -> Vectors:
    found = np.zeros((len(texts), model.dimension), dtype=np.float32)
    for start in range(0, len(order), window):
        positions = order[start : start + window]
        found[positions] = embed_passages(model, [texts[p] for p in positions])
    return found


def _unit(vectors: Vectors) -> Vectors:
    unit: Vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def _overlap(queries: Vectors, a: Vectors, b: Vectors, k: int = 10) -> float:
    """The mean share of the exact kNN top ``k`` over ``a`` that is also in it over ``b``."""
    top_a = np.argsort(-(queries @ a.T), axis=1)[:, :k]
    top_b = np.argsort(-(queries @ b.T), axis=1)[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(top_a, top_b, strict=True)]))


if __name__ == "__main__":
    main()
