"""qpp across embedding models and collections: raw kNN score gaps against scale-free ones, fitted on other data.

    .venv/bin/python benchmarks/qpp_predictors.py ../shared/data/beir/scifact@train \
        ../shared/data/classic/cisi ../shared/data/classic/med --url http://127.0.0.1:9200 \
        --model minilm=eval-: --model bge=bge-:bge.toml --lists-dir /tmp/qpp-lists \
        [--out esbridge/query/fusion/qpp_default.json --shares wide]

``--model NAME=PREFIX:CONFIG`` names one embedding model: its collections are ingested already as
``<PREFIX><folder>`` (``esbridge eval FOLDER --index ... --config CONFIG``) and CONFIG (empty: the default
settings) says which model embeds the queries. Each query's lists are fetched once (``offline``); the
gains of min-max linear fusion at each candidate kNN share are scored per query, and the ridge model is
fitted on data the scored collection is not part of:

- ``loco``: the other collections, with the same model's lists;
- ``loco pooled``: the other collections, with every model's lists;
- ``other model``: every collection, with the other models' lists only (can a fit move across models?).

for each predictor variant (``absolute``: kNN gaps as raw score differences, how they were first
defined; ``scale-free``: the product's ``predictors``, kNN gaps over the list's standard deviation) and
each set of candidate shares. Printed per model: nDCG@10 per collection and the mean beside RRF(60),
linear at 0.5 and the shipped model, with a stratified randomization p against RRF(60). ``--out``
writes the model fitted on every model's and collection's queries with the product's predictors.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
from offline import Lists, lists, rank
from ranx import Qrels

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.factory import open_embedder
from esbridge.evaluation import metrics, qpp_fit
from esbridge.evaluation.collections import parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.significance import randomization_p_value
from esbridge.query.fusion.qpp import HEAD, predictors

TOP = 10
EMPTY = nx.DiGraph()
SHARES = {
    "narrow": (0.4, 0.5, 0.6),
    "wide": (0.2, 0.35, 0.5, 0.65, 0.8),
    "wider": (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9),
    "full": (0.0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0),
}
FIXED: dict[str, dict[str, object]] = {
    "bm25 alone": {"fusion": "linear", "retrievers": ["bm25"]},
    "knn alone": {"fusion": "linear", "retrievers": ["knn"]},
    "rrf k=60": {"fusion": "rrf", "fusion_params": {"k": 60}},
    "linear knn=0.5": {"fusion": "linear"},
    "qpp shipped": {"fusion": "qpp"},
}
NEUTRAL: dict[str, object] = {"weights": {"bm25": 1.0, "knn": 1.0}, "fusion_params": {}}
Read = Callable[[Mapping[str, float], Mapping[str, float]], Sequence[float] | None]


def absolute_predictors(lexical: Mapping[str, float], semantic: Mapping[str, float]) -> tuple[float, ...] | None:
    """The predictors with kNN gaps as raw score differences, for comparison only."""
    read = predictors(lexical, semantic)
    if read is None:
        return None
    sem = [score for _, score in heapq.nlargest(HEAD, semantic.items(), key=lambda pair: pair[1])]
    return (*read[:3], sem[0] - sem[1], sem[0] - sem[-1], *read[5:])


VARIANTS: dict[str, Read] = {"absolute": absolute_predictors, "scale-free": predictors}


@dataclass
class Collected:
    """One model's lists of one collection, and what fusing them scores per query."""

    found: dict[str, Lists]
    scores: dict[str, dict[str, float]]  # row -> query -> nDCG@10
    gains: dict[float, dict[str, float]]  # kNN share -> query -> nDCG@10 of linear fusion

    def rows(self, read: Read, shares: Sequence[float]) -> tuple[list[str], list[list[float]], list[list[float]]]:
        kept, x, y = [], [], []
        for query, item in self.found.items():
            value = read(item.runs["bm25"], item.runs["knn"])
            if value is not None:
                kept.append(query)
                x.append(list(value))
                y.append([self.gains[share].get(query, 0.0) for share in shares])
        return kept, x, y


def per_query(pipeline: PipelineSettings, found: Mapping[str, Lists], qrels: Qrels) -> dict[str, float]:
    run = {query: rank(pipeline, item, TOP, None, EMPTY) for query, item in found.items()}
    return metrics.per_query(qrels, run, "ndcg@10")


def collect(args: argparse.Namespace, model: str, prefix: str, config: str) -> tuple[str, dict[str, Collected]]:
    base = load_settings(config or None, url=args.url)
    shares = sorted({share for kind in SHARES.values() for share in kind})
    found: dict[str, Collected] = {}
    with open_embedder(base.embedding) as embedder:
        for argument in args.datasets:
            collection = parse_collection(argument, "test")
            index = f"{prefix}{collection.folder.resolve().name.lower()}"
            settings = load_settings(config or None, url=args.url, index=index)
            judged = judged_queries(collection.folder, collection.split)
            cache = args.lists_dir / f"{model}-{collection.label}.json"
            top = lists(settings, embedder, judged.queries, (settings.pipeline.top_k(TOP),), cache)
            top_lists = top[settings.pipeline.top_k(TOP)]
            qrels = metrics.qrels(judged.qrels)

            def scored(
                update: dict[str, object], found: Mapping[str, Lists] = top_lists, qrels: Qrels = qrels
            ) -> dict[str, float]:
                return per_query(base.pipeline.model_copy(update={**NEUTRAL, **update}), found, qrels)

            found[collection.label] = Collected(
                top_lists,
                {name: scored(update) for name, update in FIXED.items()},
                {s: scored({"fusion": "linear", "weights": {"bm25": 1 - s, "knn": s}}) for s in shares},
            )
        return embedder.name, found


def fitted(
    train: list[Collected], held: Collected, read: Read, shares: Sequence[float], ridge: float
) -> dict[str, float]:
    x = [row for item in train for row in item.rows(read, shares)[1]]
    y = [row for item in train for row in item.rows(read, shares)[2]]
    model = qpp_fit.fit(x, y, shares, ridge=ridge)
    kept, test_x, test_y = held.rows(read, shares)
    chosen = dict(zip(kept, qpp_fit.chosen_gains(model, test_x, test_y), strict=True))
    return {query: chosen.get(query, value) for query, value in held.gains[0.5].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    parser.add_argument("--model", action="append", required=True, help="NAME=INDEX_PREFIX:CONFIG_FILE")
    parser.add_argument("--lists-dir", type=Path, required=True)
    parser.add_argument("--shares", choices=sorted(SHARES), default="wide")
    parser.add_argument("--ridge", type=float, default=qpp_fit.DEFAULT_RIDGE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.lists_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, dict[str, Collected]] = {}
    names: dict[str, str] = {}
    for spec in args.model:
        model, _, rest = spec.partition("=")
        prefix, _, config = rest.partition(":")
        names[model], data[model] = collect(args, model, prefix, config)
    for model, collections in data.items():
        labels = list(collections)
        for variant, read in VARIANTS.items():
            for kind, shares in SHARES.items():
                for held, item in collections.items():
                    same = [collections[label] for label in labels if label != held]
                    pooled = [other[label] for other in data.values() for label in labels if label != held]
                    moved = [other[label] for name, other in data.items() if name != model for label in labels]
                    item.scores[f"{variant} {kind} loco"] = fitted(same, item, read, shares, args.ridge)
                    item.scores[f"{variant} {kind} loco pooled"] = fitted(pooled, item, read, shares, args.ridge)
                    if moved:
                        item.scores[f"{variant} {kind} other model"] = fitted(moved, item, read, shares, args.ridge)
        print(f"\nnDCG@10, {names[model]}".ljust(36) + "  ".join(f"{label:>13}" for label in [*labels, "mean"]))
        for row in collections[labels[0]].scores:
            cells = [statistics.fmean(collections[label].scores[row].values()) for label in labels]
            differences = [
                [
                    value - collections[label].scores["rrf k=60"][query]
                    for query, value in collections[label].scores[row].items()
                ]
                for label in labels
            ]
            p = randomization_p_value(differences) if row != "rrf k=60" else math.nan
            line = "  ".join(f"{value:>13.4f}" for value in [*cells, statistics.fmean(cells)])
            print(f"{row:<36}{line}  p={p:.3f}")
    if args.out:
        shares = SHARES[args.shares]
        everything = [item for collections in data.values() for item in collections.values()]
        x = [row for item in everything for row in item.rows(predictors, shares)[1]]
        y = [row for item in everything for row in item.rows(predictors, shares)[2]]
        source = (
            f"fitted by benchmarks/qpp_predictors.py on {', '.join(data[next(iter(data))])} with "
            f"{', '.join(names.values())} ({len(x)} query lists), ridge {args.ridge:g}"
        )
        model_names = set(names.values())
        fitted_for = model_names.pop() if len(model_names) == 1 else ""
        fit = qpp_fit.fit(x, y, shares, ridge=args.ridge, source=source, embedding_model=fitted_for)
        args.out.write_text(json.dumps(fit.as_params(), indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
