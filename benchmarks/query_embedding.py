"""Query embedding latency per model and backend, interleaved query by query in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/query_embedding.py ../shared/data/beir/scifact --queries 200

Each variant loads as a query-serving process would (one thread: ``embedding.query_threads``) and
embeds each query alone, with its query prompt; variants take turns per query so that load from other
processes on the machine falls on all of them alike. Prints p50/p95 in ms and each p50 over
all-MiniLM-L6-v2 on torch's (the variant a query paid for before the ONNX backend).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import Embedder, embed_queries
from esbridge.embeddings.factory import load_model
from esbridge.embeddings.profiles import BGE_SMALL, E5_SMALL, MINILM
from esbridge.errors import EsbridgeError

VARIANTS: dict[str, EmbeddingSettings] = {
    "minilm torch": EmbeddingSettings(model=MINILM, backend="torch", threads=1),
    "minilm onnx-fp32": EmbeddingSettings(model=MINILM, backend="onnx", precision="fp32", threads=1),
    "minilm onnx-int8": EmbeddingSettings(model=MINILM, backend="onnx", precision="int8", threads=1),
    "bge-small onnx-int8": EmbeddingSettings(model=BGE_SMALL, backend="onnx", precision="int8", threads=1),
    "e5-small onnx-int8": EmbeddingSettings(model=E5_SMALL, backend="onnx", precision="int8", threads=1),
}
BASELINE = "minilm torch"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path, help="a BEIR folder (its queries.jsonl)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    arguments = parser.parse_args()
    with (arguments.dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line, _ in zip(lines, range(arguments.queries), strict=False)]
    models: dict[str, Embedder] = {}
    for name in arguments.variants.split(","):
        settings = VARIANTS[name.strip()]
        if settings.backend == "torch":
            import torch

            torch.set_num_threads(1)
        try:
            models[name.strip()] = load_model(settings)
        except EsbridgeError as exc:
            print(f"{name}: skipped: {exc}", file=sys.stderr)
    samples: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():  # warm-up
        embed_queries(model, queries[:5])
    for query in queries:
        for name, model in models.items():
            started = time.perf_counter()
            embed_queries(model, [query])
            samples[name].append((time.perf_counter() - started) * 1000)
    base = statistics.median(samples[BASELINE]) if BASELINE in samples else None
    print(f"{len(queries)} queries of {arguments.dataset}, one thread each")
    print(f"{'variant':<22} {'p50 ms':>7} {'p95 ms':>7} {'p50 / minilm torch':>19}")
    for name, values in samples.items():
        ordered = sorted(values)
        p50, p95 = statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]
        ratio = f"{p50 / base:.2f}" if base else "-"
        print(f"{name:<22} {p50:>7.2f} {p95:>7.2f} {ratio:>19}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
