"""Links used for recall: results below the top 10 lifted by their links to the top (``mode = "lift"``).

    .venv/bin/python benchmarks/graph_lift.py ../shared/data/classic/cisi --url http://127.0.0.1:9200 \
        --lists /tmp/cisi-lists.json

First, why adding neighbours cannot raise Recall@100: for each query it counts the neighbours of the top 10
documents that retrieval did not find (at a depth of 300 chunks per retriever, as a 100-result search asks)
and the share of them that is relevant, beside the share of relevant documents at ranks 51-100 and of the
found documents below rank 100 that are linked with the top 10. Then the product's ``link_rescore.lift``
re-ranks each query's fused list at every point of a grid (seeds, weight, minimum link weight, weighting;
weight 0 is no lift, so the folds may choose to leave the list alone), and the point is chosen by 5-fold
cross-validation over the queries (5 repeats), as in ``graph_cv.py``. The first 10 documents keep their
places, so nDCG@10 cannot move; Recall@100 of the cross-validated choice is compared with ``default`` per
query (paired t-test and randomization test).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from pathlib import Path

import networkx as nx
from graph_cv import held_out
from offline import DEEP, TOP, Lists, fuse, graph_options, linked_study

from esbridge.config.pipeline import PipelineSettings
from esbridge.evaluation import metrics
from esbridge.query.graph import GraphOptions
from esbridge.query.link_graph import adjacent
from esbridge.query.link_rescore import lift
from esbridge.query.shaping import ShapeOptions, shape

GRID: dict[str, tuple[object, ...]] = {
    "rescore_weight": (0.0, 0.02, 0.05, 0.1, 0.2, 0.5),
    "seeds": (10, 20),
    "min_link_weight": (1.0, 2.0, 3.0),
    "link_weighting": ("none", "proportional"),
}


def ranked(
    pipeline: PipelineSettings, found: Lists, graph: nx.DiGraph, options: GraphOptions | None, top_n: int
) -> list[str]:
    scores = fuse(pipeline, found)
    if options is not None and scores:
        scores = lift(scores, found.doc_of, graph, options).scores
    final = shape(scores, ShapeOptions(top_n=top_n, collapse=True), doc_of=found.doc_of)
    return list(dict.fromkeys(found.doc_of[item] for item in final))


def as_run(documents: list[str]) -> dict[str, float]:
    return {doc: float(len(documents) - position) for position, doc in enumerate(documents)}


def diagnose(
    pipeline: PipelineSettings, deep: dict[str, Lists], graph: nx.DiGraph, relevant: dict[str, set[str]]
) -> None:
    for minimum in (1.0, 3.0, 5.0):
        unfound, found_below, tail = [], [], []
        for query, found in deep.items():
            order = ranked(pipeline, found, graph, None, 10_000)
            near = {doc for seed in order[:TOP] for doc in adjacent(graph, seed, "both", minimum)}
            outside = near - set(order)
            if outside:
                unfound.append((len(outside), len(outside & relevant[query]) / len(outside)))
            below = [doc for doc in order[DEEP:] if doc in near]
            if below:
                found_below.append(sum(doc in relevant[query] for doc in below) / len(below))
            tail.append(sum(doc in relevant[query] for doc in order[50:DEEP]) / max(len(order[50:DEEP]), 1))
        print(
            f"links >= {minimum:g}: neighbours of the top 10 not found: {statistics.fmean(n for n, _ in unfound):.1f} "
            f"a query, {statistics.fmean(p for _, p in unfound):.3f} relevant; found below rank 100 and linked "
            f"with the top 10: {statistics.fmean(found_below):.3f} relevant; ranks 51-100: {statistics.fmean(tail):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--url")
    parser.add_argument("--index", help="default: eval-<dataset folder>")
    parser.add_argument("--lists", type=Path, help="file keeping the fetched lists between runs")
    args = parser.parse_args()
    study = linked_study(args.dataset, args.url, args.index, args.lists)
    pipeline, judged, depths = study.settings.pipeline, study.judged, study.depths
    found, graph = study.found, study.graph
    qrels = metrics.qrels(judged.qrels)
    queries = list(judged.queries)
    relevant = {query: {doc for doc, grade in judged.qrels[query].items() if grade > 0} for query in queries}
    print(f"{args.dataset.name}: {len(queries)} queries, {graph.number_of_edges()} links")
    diagnose(pipeline, found[depths[1]], graph, relevant)
    keys = list(GRID)
    grid = {
        ",".join(f"{key}={value}" for key, value in zip(keys, values, strict=True)): graph_options(
            {"mode": "lift", **dict(zip(keys, values, strict=True))}
        )
        for values in itertools.product(*GRID.values())
    }
    for metric, depth, top_n in (("ndcg@10", depths[0], TOP), ("recall@100", depths[1], DEEP)):
        baseline = metrics.per_query(
            qrels, {q: as_run(ranked(pipeline, found[depth][q], graph, None, top_n)) for q in queries}, metric
        )
        per_point = {
            name: metrics.per_query(
                qrels, {q: as_run(ranked(pipeline, found[depth][q], graph, options, top_n)) for q in queries}, metric
            )
            for name, options in grid.items()
        }
        held_out(metric, "lift", baseline, per_point, queries)


if __name__ == "__main__":
    main()
