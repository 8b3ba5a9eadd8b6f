"""Re-ranking depth and weight on a BEIR split: nDCG@10 of ``default`` and ``default+rerank`` variants.

    HF_HUB_OFFLINE=1 ESBRIDGE_DATA_DIR=/tmp/sweep .venv/bin/python benchmarks/rerank_sweep.py \
        ../shared/data/beir/scifact --split train --limit 40 --tops 10,20,30 --weights 0.3,0.5,0.7,1

Ingests the corpus (unchanged chunks are skipped; vectors come from the embedding cache), then runs
``default`` and one ``default+rerank`` configuration per (top, weight) over the same queries in one run.
The cross-encoder ([pipeline.rerank] of the settings, e.g. ``backend = "onnx"``) scores each (query,
text) pair once, so every variant costs what the deepest one does. Prints nDCG@10 per variant, its
p-value against ``default`` (paired t-test), and the cross-encoder's time per query at each depth.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esbridge.config.settings import load_settings
from esbridge.embeddings.factory import open_embedder
from esbridge.evaluation import metrics
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.methods import Configuration, configuration
from esbridge.evaluation.runner import Depth
from esbridge.evaluation.session import prepare_index, run
from esbridge.query.rerank import RERANKERS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--tops", default="10,20,30")
    parser.add_argument("--weights", default="0.3,0.5,0.7,1")
    parser.add_argument("--index", default=None)
    parser.add_argument("--config", type=Path, default=None)
    arguments = parser.parse_args()
    settings = load_settings(
        config_file=arguments.config, index=arguments.index or f"eval-{arguments.dataset.resolve().name.lower()}"
    )
    judged = judged_queries(arguments.dataset, arguments.split, arguments.limit)
    base = configuration("default", settings.pipeline)
    variants: list[Configuration] = [base]
    for top in (int(value) for value in arguments.tops.split(",")):
        for weight in (float(value) for value in arguments.weights.split(",")):
            rerank = settings.pipeline.rerank.model_copy(update={"enabled": True, "top": top, "weight": weight})
            pipeline = base.pipeline.model_copy(update={"rerank": rerank})
            variants.append(Configuration(f"rerank top {top} weight {weight:g}", pipeline, None, None))
    with open_embedder(settings.embedding) as embedder:
        prepare_index(settings, arguments.dataset, embedder, reuse=False)
        started = time.perf_counter()
        outcome = run(settings, judged, variants, embedder, depth=Depth(deep=False))
        wall = time.perf_counter() - started
    runs = {item.configuration.name: item.top for item in outcome.outcomes}
    scored = metrics.compare(metrics.qrels(judged.qrels), runs, ["ndcg@10"], base.name)
    print(f"{len(judged.queries)} {arguments.split} queries of {arguments.dataset}; {wall:.0f}s for all variants")
    print(f"{'variant':<28} {'nDCG@10':>8} {'p vs default':>13}")
    for name, result in scored.items():
        p = result.p_values.get("ndcg@10", float("nan"))
        print(f"{name:<28} {result.scores['ndcg@10']:>8.4f} {p:>13.3f}")
    _latency(settings, arguments.dataset, judged.queries, [int(value) for value in arguments.tops.split(",")])
    return 0


def _latency(settings: object, dataset: Path, queries: dict[str, str], tops: list[int]) -> None:
    """The cross-encoder alone on each of the first 5 queries' top passages (first passages of the corpus)."""
    import json

    from esbridge.config.settings import Settings

    assert isinstance(settings, Settings)
    reranker = RERANKERS.get_named(settings.pipeline.rerank.name)(settings.pipeline.rerank)
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        texts = [
            f"{record['title']}\n{record['text']}"
            for record in (json.loads(line) for line, _ in zip(lines, range(max(tops)), strict=False))
        ]
    for top in sorted(set(tops)):
        spent = []
        for query in list(queries.values())[:5]:
            started = time.perf_counter()
            reranker.score(query, texts[:top])
            spent.append((time.perf_counter() - started) * 1000)
        print(f"re-ranking top {top}: {sorted(spent)[len(spent) // 2]:.0f} ms per query (median of 5)")


if __name__ == "__main__":
    sys.exit(main())
