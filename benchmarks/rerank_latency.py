"""Time the cross-encoder adds per query: re-ranking the top 20 and top 50 SciFact abstracts.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_latency.py ../shared/data/beir/scifact [--rounds 3]

Five queries, each against the corpus' first 20 and 50 abstracts (title and text, as a search re-ranks
them), with the int8 ONNX ms-marco-MiniLM-L-12-v2 from esbridge's model folder; prints the median and the
fastest per depth. Each call runs twice, alternated: as esbridge cuts it (``SPLIT`` batches of at most
``batch_size`` pairs, run side by side on the session's threads) and as one batch of up to ``batch_size``
pairs at a time (``SPLIT = 1``), so both see the same load; which runs first alternates by round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esbridge.config.pipeline import RerankSettings
from esbridge.embeddings import onnx_cross_encoder
from esbridge.query.rerank import RERANKERS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, nargs="?", default=Path("../shared/data/beir/scifact"))
    parser.add_argument("--rounds", type=int, default=1, help="times each query is scored per variant")
    args = parser.parse_args()
    with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        records = [json.loads(line) for line, _ in zip(lines, range(50), strict=False)]
    corpus = [f"{record['title']}\n{record['text']}" for record in records]
    with (args.dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line, _ in zip(lines, range(5), strict=False)]
    reranker = RERANKERS.get_named("cross-encoder")(RerankSettings(backend="onnx", precision="int8"))
    reranker.score("warm-up", corpus[:2])
    split = onnx_cross_encoder.SPLIT
    variants = {f"{split} batches a call": split, "one batch at a time": 1}
    for top in (20, 50):
        spent: dict[str, list[float]] = {name: [] for name in variants}
        for round_ in range(args.rounds):
            for query in queries:
                order = list(variants.items())
                for name, value in order if round_ % 2 == 0 else order[::-1]:
                    onnx_cross_encoder.SPLIT = value
                    started = time.perf_counter()
                    reranker.score(query, corpus[:top])
                    spent[name].append((time.perf_counter() - started) * 1000)
        for name, times in spent.items():
            print(
                f"top {top}, {name}: median {statistics.median(times):.0f} ms, "
                f"fastest {min(times):.0f} ms over {len(times)} calls"
            )
    onnx_cross_encoder.SPLIT = split
    return 0


if __name__ == "__main__":
    sys.exit(main())
