"""Graph expansion on a collection with links: its settings chosen by cross-validation over the queries.

    .venv/bin/python benchmarks/graph_cv.py ../shared/data/classic/cisi --url http://127.0.0.1:9200 \
        --lists /tmp/cisi-lists.json

The collection must be ingested already (``esbridge eval FOLDER`` does it into ``eval-<folder>``). Each
query's lists are fetched once (``offline``); ``default`` (no expansion) and ``default`` with expansion
at each point of a grid (seeds, neighbours per seed, weight, hops, minimum link weight, placement,
weighting) rank them in-process over the index's whole link graph. Then, for 5 folds x 5 repeats, the
point with the best mean on the training folds is scored on the held-out fold; a query's
cross-validated value is the mean of its held-out values over the repeats. It is compared with
``default`` per query (paired t-test and randomization test). The point chosen on all queries is what
a default would ship; ``esbridge eval ... --methods default,default+graph`` with it in the settings
file confirms the figure through the real pipeline.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from offline import DEEP, TOP, graph_options, linked_study, rank
from scipy import stats

from esbridge.evaluation import metrics
from esbridge.evaluation.significance import randomization_p_value

GRID: dict[str, tuple[object, ...]] = {
    "seeds": (3, 5, 10),
    "per_seed": (2, 5, 10),
    "weight": (0.25, 0.5, 1.0),
    "hops": (1, 2),
    "min_link_weight": (1.0, 2.0, 3.0),
    "placement": ("below_seeds", "below_all"),
    "link_weighting": ("none", "proportional"),
}
"""2 hops over every link (weight >= 1: 53 neighbours a document on CISI) reach nearly the whole collection,
so 2 hops are tried only above a minimum weight of 1."""
FOLDS, REPEATS = 5, 5


def points() -> list[dict[str, object]]:
    keys = list(GRID)
    found = [dict(zip(keys, values, strict=True)) for values in itertools.product(*GRID.values())]
    return [point for point in found if point["hops"] == 1 or float(str(point["min_link_weight"])) > 1]


def label(point: dict[str, object]) -> str:
    return ",".join(f"{key}={value}" for key, value in point.items())


def cross_validate(values: dict[str, dict[str, float]], queries: list[str]) -> tuple[dict[str, float], Counter[str]]:
    """Per query, the mean held-out value of the point chosen on the other folds; and how often each was chosen."""
    held: dict[str, list[float]] = {query: [] for query in queries}
    chosen: Counter[str] = Counter()
    for repeat in range(REPEATS):
        order = list(queries)
        random.Random(repeat).shuffle(order)  # noqa: S311 (a reproducible split, not a secret)
        for fold in range(FOLDS):
            test = set(order[fold::FOLDS])
            train = [query for query in order if query not in test]
            best = max(sorted(values), key=lambda name: statistics.fmean(values[name][query] for query in train))
            chosen[best] += 1
            for query in test:
                held[query].append(values[best][query])
    return {query: statistics.fmean(found) for query, found in held.items()}, chosen


def held_out(
    metric: str, label: str, baseline: dict[str, float], per_point: dict[str, dict[str, float]], queries: list[str]
) -> dict[str, Any]:
    """Cross-validates the choice among ``per_point``, prints it against ``baseline`` (paired t-test and
    randomization test over the queries, the best point in-sample, the points the folds chose) and returns it."""
    validated, chosen = cross_validate(per_point, queries)
    differences = [validated[query] - baseline[query] for query in queries]
    t_p = float(stats.ttest_rel([validated[q] for q in queries], [baseline[q] for q in queries]).pvalue)
    r_p = randomization_p_value([differences])
    overall = max(sorted(per_point), key=lambda name: statistics.fmean(per_point[name].values()))
    print(
        f"{metric}: default {statistics.fmean(baseline.values()):.4f}; "
        f"{label}, cross-validated {statistics.fmean(validated.values()):.4f} "
        f"(t-test p={t_p:.4f}, randomization p={r_p:.4f}); "
        f"best in-sample {statistics.fmean(per_point[overall].values()):.4f} at {overall}"
    )
    for name, count in chosen.most_common(3):
        mean = statistics.fmean(per_point[name].values())
        print(f"  chosen in {count}/{FOLDS * REPEATS} folds: {name} ({mean:.4f})")
    return {
        "default": statistics.fmean(baseline.values()),
        "cross_validated": statistics.fmean(validated.values()),
        "t_test_p": t_p,
        "randomization_p": r_p,
        "chosen_on_all": overall,
        "chosen_in_folds": dict(chosen.most_common(5)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--url")
    parser.add_argument("--index", help="default: eval-<dataset folder>")
    parser.add_argument("--lists", type=Path, help="file keeping the fetched lists between runs")
    parser.add_argument("--json", type=Path, help="write every point's means here")
    parser.add_argument("--limit", type=int, help="only the first N grid points (a quick look)")
    args = parser.parse_args()
    study = linked_study(args.dataset, args.url, args.index, args.lists)
    pipeline, judged, depths = study.settings.pipeline, study.judged, study.depths
    found, links = study.found, study.graph
    # The same graph without the links each point would not follow: fewer edges to walk, same expansion.
    pruned = {
        weight: links.edge_subgraph([(a, b) for a, b, w in links.edges(data="weight") if w >= weight]).copy()
        for weight in {float(str(value)) for value in GRID["min_link_weight"]}
    }
    qrels = metrics.qrels(judged.qrels)
    queries = list(judged.queries)
    grid = {label(point): graph_options(point) for point in points()[: args.limit]}

    def values(metric: str, depth: int, top_n: int) -> dict[str, dict[str, float]]:
        runs = {"default": {query: rank(pipeline, found[depth][query], top_n, None, links) for query in queries}}
        for name, options in grid.items():
            graph = pruned[options.min_link_weight]
            runs[name] = {query: rank(pipeline, found[depth][query], top_n, options, graph) for query in queries}
        return {name: metrics.per_query(qrels, run, metric) for name, run in runs.items()}

    print(f"{args.dataset.name}: {len(queries)} queries, {len(grid)} graph settings, {links.number_of_edges()} links")
    summary: dict[str, object] = {"queries": len(queries), "points": len(grid)}
    means: dict[str, dict[str, float]] = {}
    for metric, depth, top_n in (("ndcg@10", depths[0], TOP), ("recall@100", depths[1], DEEP)):
        per_point = values(metric, depth, top_n)
        baseline = per_point.pop("default")
        for name, found_values in per_point.items():
            means.setdefault(name, {})[metric] = statistics.fmean(found_values.values())
        summary[metric] = held_out(metric, "graph", baseline, per_point, queries)
    if args.json:
        args.json.write_text(json.dumps({**summary, "means": means}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
