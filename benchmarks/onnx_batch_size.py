"""How many texts ONNX Runtime should embed per batch: speed, and whether a text's vector depends on its batch.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/onnx_batch_size.py ../shared/data/beir/scifact \
        [--model BAAI/bge-small-en-v1.5] [--precision int8] [--documents 256] [--sizes 1 4 16 32] [--repeats 3]

Embeds the first ``--documents`` titles and abstracts of a BEIR corpus, cut at 150 words (about the 200 word
pieces of an ingest chunk), through esbridge's own ``OnnxEmbedder`` with the passage prompt, once per batch
size, the sizes taking turns. Prints per size: documents per second (the best repeat), CPU seconds per 100
documents, and how far each document's vector is from the one it gets embedded alone (minimum and mean cosine).
With int8 weights the activations are quantized per batch (one scale for the whole batch tensor), so a vector
also depends on the texts it was batched with; with batches of one it depends on its own text only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from esbridge.embeddings.base import embed_passages
from esbridge.embeddings.onnx_runtime import OnnxEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="BAAI/bge-small-en-v1.5")
    parser.add_argument("--precision", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--documents", type=int, default=256)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as corpus:
        records = [json.loads(line) for _, line in zip(range(args.documents), corpus, strict=False)]
    texts = [f"{record['title']}\n{' '.join(record['text'].split()[:150])}" for record in records]
    embedders = {size: OnnxEmbedder(args.model, precision=args.precision, batch_size=size) for size in args.sizes}
    alone = np.asarray([embed_passages(embedders[min(args.sizes)], [text])[0] for text in texts])
    timings: dict[int, list[tuple[float, float]]] = {size: [] for size in args.sizes}
    vectors: dict[int, np.ndarray] = {}
    for repeat in range(args.repeats):
        for size in args.sizes if repeat % 2 == 0 else list(reversed(args.sizes)):
            cpu, wall = time.process_time(), time.perf_counter()
            vectors[size] = np.asarray(embed_passages(embedders[size], texts))
            timings[size].append((time.perf_counter() - wall, time.process_time() - cpu))
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{args.model} {args.precision}, {len(texts)} documents, {args.repeats} repeats; load {load}")
    unit = alone / np.linalg.norm(alone, axis=1, keepdims=True)
    for size in args.sizes:
        wall = min(sample[0] for sample in timings[size])
        cpu = min(sample[1] for sample in timings[size])
        found = vectors[size] / np.linalg.norm(vectors[size], axis=1, keepdims=True)
        cosines = np.sum(found * unit, axis=1)
        print(
            f"batch {size:3d}: {len(texts) / wall:6.1f} documents/s, {100 * cpu / len(texts):5.2f} CPU s / 100, "
            f"cosine to the text embedded alone: min {cosines.min():.5f}, mean {cosines.mean():.5f}"
        )
    for embedder in embedders.values():
        embedder.close()


if __name__ == "__main__":
    main()
