"""Fusion defaults chosen across collections: every candidate on every collection, and leave-one-collection-out.

    .venv/bin/python benchmarks/fusion_loco.py ../shared/data/beir/scifact@train ../shared/data/classic/cisi \
        ../shared/data/classic/med --url http://127.0.0.1:9200 --lists-dir /tmp/lists

Each collection must be ingested already (``esbridge eval FOLDER`` makes ``eval-<folder>``). Each query's
lists are fetched once (``offline``) and every candidate (RRF at several k and weights, min-max linear at
several kNN shares, DBSF, qpp with the shipped model, qpp refitted) ranks them in-process with the
product's own fusion functions. Printed: nDCG@10 per collection and the mean over collections; then,
for each collection held out, the fixed candidate with the best mean on the others and its figure on
the held-out one, and qpp fitted on the others' queries and scored on the held-out one.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import networkx as nx
from offline import Lists, lists, rank
from ranx import Qrels

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.factory import open_embedder
from esbridge.evaluation import metrics, qpp_fit
from esbridge.evaluation.collections import Collection, parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.significance import randomization_p_value
from esbridge.query.fusion.qpp import predictors

TOP = 10
EMPTY = nx.DiGraph()
SHARES = {"narrow": (0.4, 0.5, 0.6), "wide": (0.2, 0.35, 0.5, 0.65, 0.8)}


def candidates() -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for k in (10, 30, 60, 100):
        for share in (0.3, 0.4, 0.5, 0.6, 0.7):
            found[f"rrf k={k} knn={share:g}"] = {
                "fusion": "rrf",
                "weights": {"bm25": 1 - share, "knn": share},
                "fusion_params": {"k": k},
            }
    for share in (0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 0.65, 0.7, 0.8):
        found[f"linear knn={share:g}"] = {"fusion": "linear", "weights": {"bm25": 1 - share, "knn": share}}
    found["dbsf"] = {"fusion": "dbsf"}
    found["qpp shipped"] = {"fusion": "qpp"}
    return found


def pipeline_for(base: PipelineSettings, update: dict[str, object]) -> PipelineSettings:
    defaults = {"weights": {"bm25": 1.0, "knn": 1.0}, "fusion_params": {}}
    return base.model_copy(update={**defaults, **update})


def per_query(pipeline: PipelineSettings, found: dict[str, Lists], qrels: Qrels) -> dict[str, float]:
    run = {query: rank(pipeline, lists_, TOP, None, EMPTY) for query, lists_ in found.items()}
    return metrics.per_query(qrels, run, "ndcg@10")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    parser.add_argument("--lists-dir", type=Path, required=True)
    args = parser.parse_args()
    chosen: list[Collection] = [parse_collection(argument, "test") for argument in args.datasets]
    base = load_settings(url=args.url)
    values: dict[str, dict[str, dict[str, float]]] = {}  # collection -> candidate -> query -> nDCG@10
    rows: dict[str, tuple[list[list[float]], dict[str, list[list[float]]]]] = {}
    kept_queries: dict[str, list[str]] = {}
    with open_embedder(base.embedding) as embedder:
        for collection in chosen:
            settings = load_settings(url=args.url, index=f"eval-{collection.folder.resolve().name.lower()}")
            judged = judged_queries(collection.folder, collection.split)
            cache = args.lists_dir / f"{collection.label}.json"
            found = lists(settings, embedder, judged.queries, (settings.pipeline.top_k(TOP),), cache)
            found_top = found[settings.pipeline.top_k(TOP)]
            qrels = metrics.qrels(judged.qrels)
            values[collection.label] = {
                name: per_query(pipeline_for(base.pipeline, update), found_top, qrels)
                for name, update in candidates().items()
            }
            read = {query: predictors(item.runs["bm25"], item.runs["knn"]) for query, item in found_top.items()}
            kept = [query for query, row in read.items() if row is not None]
            by_name = values[collection.label]
            gains = {
                kind: [[by_name[f"linear knn={share:g}"][query] for share in shares] for query in kept]
                for kind, shares in SHARES.items()
            }
            rows[collection.label] = ([list(row) for query in kept if (row := read[query]) is not None], gains)
            kept_queries[collection.label] = kept
    labels = [collection.label for collection in chosen]
    names = list(candidates())

    def mean(label: str, name: str) -> float:
        return statistics.fmean(values[label][name].values())

    print("nDCG@10        " + "  ".join(f"{label:>14}" for label in [*labels, "mean"]))
    for name in names:
        cells = [mean(label, name) for label in labels]
        print(f"{name:<22}" + "  ".join(f"{value:>14.4f}" for value in [*cells, statistics.fmean(cells)]))
    print()
    for held in labels:
        others = [label for label in labels if label != held]
        best = max(names, key=lambda name: statistics.fmean(mean(label, name) for label in others))
        line = f"held out {held}: fixed choice on the others {best!r} -> {mean(held, best):.4f}"
        for kind, shares in SHARES.items():
            train_x = [row for label in others for row in rows[label][0]]
            train_y = [row for label in others for row in rows[label][1][kind]]
            model = qpp_fit.fit(train_x, train_y, shares)
            test_x, test_y = rows[held][0], rows[held][1][kind]
            scored = dict(zip(kept_queries[held], qpp_fit.chosen_gains(model, test_x, test_y), strict=True))
            full = {
                query: scored.get(query, values[held]["linear knn=0.5"][query]) for query in values[held]["qpp shipped"]
            }
            line += f"; qpp {kind} fitted on the others -> {statistics.fmean(full.values()):.4f}"
            values[held][f"qpp {kind} loco"] = full
        print(line)
    print()
    for name in ("qpp shipped", "qpp narrow loco", "qpp wide loco", "linear knn=0.5"):
        differences = [
            [values[label][name][query] - values[label]["rrf k=60 knn=0.5"][query] for query in values[label][name]]
            for label in labels
        ]
        cells = [mean(label, name) for label in labels]
        print(
            f"{name:<22}"
            + "  ".join(f"{value:>14.4f}" for value in [*cells, statistics.fmean(cells)])
            + f"  vs rrf k=60: p={randomization_p_value(differences):.4f}"
        )


if __name__ == "__main__":
    main()
