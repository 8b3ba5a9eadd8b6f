"""Links used to re-score the direct results instead of adding neighbours: score regularisation.

    .venv/bin/python benchmarks/graph_smoothing.py ../shared/data/classic/cisi --url http://127.0.0.1:9200 \
        --lists /tmp/cisi-lists.json

The cluster hypothesis read as in Diaz, "Regularizing ad hoc retrieval scores" (CIKM 2005): a document
linked to other highly scored documents is more likely relevant. Each directly retrieved document's
fused score (its best chunk's) becomes ``s(d) + lam * sum_e t(d, e) * s(e) / sum_e t(d, e)`` over the
other retrieved documents ``e`` it links to with weight at least ``m``, ``t`` the link weight over the
heaviest; nothing new enters the list. Settings are chosen by cross-validation as in ``graph_cv.py``.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import networkx as nx
from graph_cv import held_out
from offline import DEEP, TOP, Lists, fuse, linked_study

from esbridge.config.pipeline import PipelineSettings
from esbridge.evaluation import metrics
from esbridge.query.link_graph import adjacent

LAMBDAS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
MIN_WEIGHTS = (1.0, 2.0, 3.0)


def smoothed(
    pipeline: PipelineSettings, found: Lists, graph: nx.DiGraph, lam: float, minimum: float, top_n: int
) -> dict[str, float]:
    scores = fuse(pipeline, found)
    best: dict[str, float] = {}
    for item, score in sorted(scores.items(), key=lambda pair: -pair[1]):
        best.setdefault(found.doc_of[item], score)
    if lam > 0:
        lifted = {}
        for doc, score in best.items():
            links = {other: weight for other, weight in adjacent(graph, doc, "both", minimum).items() if other in best}
            if links:
                heaviest = max(links.values())
                total = sum(weight / heaviest for weight in links.values())
                score += lam * sum(weight / heaviest * best[other] for other, weight in links.items()) / total
            lifted[doc] = score
        best = lifted
    ranked = sorted(best, key=lambda doc: (-best[doc], doc))[:top_n]
    return {doc: float(len(ranked) - position) for position, doc in enumerate(ranked)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--url")
    parser.add_argument("--lists", type=Path)
    args = parser.parse_args()
    study = linked_study(args.dataset, args.url, None, args.lists)
    pipeline, judged, depths = study.settings.pipeline, study.judged, study.depths
    found, graph = study.found, study.graph
    qrels = metrics.qrels(judged.qrels)
    queries = list(judged.queries)
    for metric, depth, top_n in (("ndcg@10", depths[0], TOP), ("recall@100", depths[1], DEEP)):
        per_point: dict[str, dict[str, float]] = {}
        for lam, minimum in itertools.product((0.0, *LAMBDAS), MIN_WEIGHTS):
            run = {q: smoothed(pipeline, found[depth][q], graph, lam, minimum, top_n) for q in queries}
            per_point[f"lam={lam:g},min={minimum:g}"] = metrics.per_query(qrels, run, metric)
        baseline = per_point["lam=0,min=1"]
        held_out(metric, "re-scoring", baseline, per_point, queries)


if __name__ == "__main__":
    main()
