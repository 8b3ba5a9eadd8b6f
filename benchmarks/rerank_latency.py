"""Time the cross-encoder adds per query: re-ranking the top 20 and top 50 SciFact abstracts.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/rerank_latency.py ../shared/data/beir/scifact

Five queries, each against the corpus' first 20 and 50 abstracts (title and text, as a search re-ranks
them), with the int8 ONNX ms-marco-MiniLM-L-12-v2 from esbridge's model folder; prints the median.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esbridge.config.pipeline import RerankSettings
from esbridge.query.rerank import RERANKERS


def main() -> int:
    dataset = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/data/beir/scifact")
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        records = [json.loads(line) for line, _ in zip(lines, range(50), strict=False)]
    corpus = [f"{record['title']}\n{record['text']}" for record in records]
    with (dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line, _ in zip(lines, range(5), strict=False)]
    reranker = RERANKERS.get_named("cross-encoder")(RerankSettings(backend="onnx", precision="int8"))
    reranker.score("warm-up", corpus[:2])
    for top in (20, 50):
        spent = []
        for query in queries:
            started = time.perf_counter()
            reranker.score(query, corpus[:top])
            spent.append((time.perf_counter() - started) * 1000)
        print(f"top {top}: median {statistics.median(spent):.0f} ms, min {min(spent):.0f} ms over {len(spent)} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
