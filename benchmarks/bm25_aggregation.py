"""A document's chunk BM25 scores aggregated instead of its best chunk alone: BM25 against plain BM25, and the hybrid.

    .venv/bin/python benchmarks/bm25_aggregation.py ../shared/data/beir/scifact@train \
        ../shared/data/classic/cisi ../shared/data/classic/med --url http://127.0.0.1:9200 \
        --lists-dir /tmp/agg-lists [--hybrid]

esbridge scores chunks and a document is represented by its best chunk (MaxP). Passage-score
aggregation (Callan, SIGIR 1994; Dai & Callan, SIGIR 2019: FirstP, MaxP, SumP) instead combines the
scores of every chunk of a document found in the BM25 list. Each query's BM25 and kNN chunk lists are
fetched once from ``eval-<folder>`` with the pipeline's request bodies (``offline``) at the top-10
search's depth (20 chunks), a deeper one (100) and the Recall@100 search's (300). Each aggregation
gives a document's best chunk the document's combined score (the other chunks keep theirs, so MaxP is
today's list exactly) and the list is ranked as the ``bm25`` configuration ranks it. Candidates, over
the document's chunk scores s1 >= s2 >= ... and the list's top score:

- ``maxp``: s1 (today); ``rest λ``: s1 + λ (s2 + s3 + ...), λ = 1 is SumP;
- ``lse τ``: log-sum-exp with temperature τ times the top score (scale-free; τ -> 0 is MaxP);
- ``count λ``: s1 + λ x top x (number of chunks - 1).

Adjacent chunks share 32 word pieces, so a sum counts those terms twice. A parameter is chosen per
collection on the other collections (leave-one-collection-out, mean nDCG@10 of BM25 alone), never on
the collection scored. ``--hybrid`` also fuses each aggregated BM25 list with the kNN list by qpp, its
ridge model refitted on the other collections' lists with the same aggregation (``qpp_predictors``),
and compares it per query with today's (MaxP) held-out figures: paired t-test per collection,
stratified randomization test on the mean. The rows ``plain BM25 documents`` put plain BM25's 20
documents (``plain-<folder>``, ``plain_bm25.py``) in place of the chunk list, beside the kNN list of 20
chunks collapsed to documents, or the first 20 documents of the kNN list of 100 chunks; with ``--whole``,
``whole-document BM25`` does the same with esbridge's request over whole documents at k1 1.2, b 0.75
(``wholedoc-<folder>``, built on first use without vectors, as ``bm25_causes.py`` builds its indices).
"""

from __future__ import annotations

import argparse
import heapq
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bm25_causes import CHUNKINGS, QUERIES, build, chunk_sources
from offline import Lists, lists, rank
from plain_bm25 import plain_index, plain_run
from qpp_predictors import EMPTY, FIXED, NEUTRAL, SHARES, Collected, fitted
from ranx import Qrels
from scipy.stats import ttest_rel

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.factory import open_embedder
from esbridge.engines import connect
from esbridge.evaluation import metrics, qpp_fit
from esbridge.evaluation.collections import parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.significance import randomization_p_value
from esbridge.query.fusion.qpp import predictors

Combine = Callable[[Sequence[float], float], float]
"""A document's chunk scores, best first, and the list's top score -> the document's score."""
DEPTHS = (20, 100, 300)
TOP_DEPTHS = (20, 100)
RECALL_DEPTH = 300
DOCUMENTS = "plain BM25 documents"
WHOLE = "whole-document BM25"
WHOLE_K1_B = (1.2, 0.75)
"""The hybrid row whose BM25 list is plain BM25's (one document per record), the kNN list collapsed to documents."""


def maxp(_: float) -> Combine:
    return lambda scores, top: scores[0]


def rest(weight: float) -> Combine:
    return lambda scores, top: scores[0] + weight * sum(scores[1:])


def log_sum_exp(temperature: float) -> Combine:
    def combine(scores: Sequence[float], top: float) -> float:
        t = temperature * top
        return scores[0] + t * math.log(sum(math.exp((score - scores[0]) / t) for score in scores))

    return combine


def count(weight: float) -> Combine:
    return lambda scores, top: scores[0] + weight * top * (len(scores) - 1)


FAMILIES: dict[str, tuple[Callable[[float], Combine], tuple[float, ...]]] = {
    "maxp": (maxp, (0.0,)),
    "rest": (rest, (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)),
    "lse": (log_sum_exp, (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)),
    "count": (count, (0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1)),
}
SETTINGS: dict[str, tuple[str, Combine]] = {
    f"{family} {value:g}" if family != "maxp" else "maxp": (family, make(value))
    for family, (make, values) in FAMILIES.items()
    for value in values
}


def aggregate(scores: Mapping[str, float], doc_of: Mapping[str, str], combine: Combine) -> dict[str, float]:
    """``scores`` with each document's best chunk carrying ``combine`` of all the document's chunk scores."""
    if not scores:
        return {}
    top = max(scores.values())
    by_doc: dict[str, list[tuple[float, str]]] = {}
    for chunk, score in scores.items():
        by_doc.setdefault(doc_of[chunk], []).append((score, chunk))
    result = dict(scores)
    for chunks in by_doc.values():
        chunks.sort(reverse=True)
        result[chunks[0][1]] = combine([score for score, _ in chunks], top)
    return result


def aggregated(found: Lists, combine: Combine) -> Lists:
    return Lists({**found.runs, "bm25": aggregate(found.runs["bm25"], found.doc_of, combine)}, found.doc_of)


@dataclass
class Collection:
    label: str
    qrels: Qrels
    found: dict[int, dict[str, Lists]]
    plain: float
    documents: dict[str, dict[str, Lists]]  # hybrid row -> query -> a document-level BM25 list beside kNN's


def load(argument: str, url: str | None, lists_dir: Path, embedder: Embedder, whole: bool) -> Collection:
    collection = parse_collection(argument, "test")
    name = collection.folder.resolve().name.lower()
    settings = load_settings(url=url, index=f"eval-{name}")
    judged = judged_queries(collection.folder, collection.split)
    found = lists(settings, embedder, judged.queries, DEPTHS, lists_dir / f"{collection.label}.json")
    qrels = metrics.qrels(judged.qrels)
    engine = connect(settings)
    try:
        plain_index(engine, collection.folder, f"plain-{name}")
        plain = metrics.mean_scores(qrels, plain_run(engine, f"plain-{name}", judged.queries), ["ndcg@10"])
        depth = DEPTHS[0]
        runs = {DOCUMENTS: plain_run(engine, f"plain-{name}", judged.queries, size=depth)}
        if whole:
            index = f"wholedoc-{name}"
            if not engine.index_exists(index):
                build(engine, index, chunk_sources(collection.folder, *CHUNKINGS["doc"]), *WHOLE_K1_B)
            runs[WHOLE] = whole_run(engine, index, judged.queries, depth)
    finally:
        engine.close()
    documents = {}
    for row, run in runs.items():
        documents[row] = {query: document_lists(run.get(query, {}), item) for query, item in found[depth].items()}
        documents[f"{row}, kNN {depth} docs"] = {
            query: document_lists(run.get(query, {}), item, depth) for query, item in found[TOP_DEPTHS[1]].items()
        }
    return Collection(collection.label, qrels, found, plain["ndcg@10"], documents)


def whole_run(engine: Any, index: str, queries: Mapping[str, str], size: int) -> dict[str, dict[str, float]]:
    """esbridge's BM25 request over whole documents: document id -> score per query."""
    run = {}
    for query, text in queries.items():
        hits = engine.search(index, QUERIES["esbridge body"](text, size)).hits
        run[query] = {str(hit.source["doc_id"]): hit.score for hit in hits}
    return run


def document_lists(lexical: dict[str, float], found: Lists, documents: int | None = None) -> Lists:
    """A document-level BM25 list beside the kNN list collapsed to documents (each by its best chunk), the
    first ``documents`` of them if given."""
    semantic: dict[str, float] = {}
    for chunk, score in found.runs["knn"].items():
        doc = found.doc_of[chunk]
        semantic[doc] = max(score, semantic.get(doc, score))
    if documents is not None:
        semantic = dict(heapq.nlargest(documents, semantic.items(), key=lambda pair: pair[1]))
    return Lists({"bm25": lexical, "knn": semantic}, {doc: doc for doc in [*lexical, *semantic]})


def bm25_alone(
    pipeline: PipelineSettings, item: Collection, combine: Combine, depth: int, top_n: int
) -> dict[str, dict[str, float]]:
    return {
        query: rank(pipeline, aggregated(found, combine), top_n, None, EMPTY)
        for query, found in item.found[depth].items()
    }


def multi_chunk_share(found: Mapping[str, Lists]) -> float:
    """The mean share of the first 10 documents (by best chunk) with two or more chunks in the BM25 list: what an
    aggregation has to work with."""
    shares = []
    for item in found.values():
        scores = item.runs["bm25"]
        order = [item.doc_of[chunk] for chunk in sorted(scores, key=scores.__getitem__, reverse=True)]
        top = list(dict.fromkeys(order))[:10]
        shares.append(sum(order.count(doc) > 1 for doc in top) / len(top) if top else 0.0)
    return statistics.fmean(shares)


def mean(values: Mapping[str, float]) -> float:
    return statistics.fmean(values.values())


def held_out_choice(table: Mapping[str, Mapping[str, float]], family: str | None, held: str) -> str:
    """The setting (of ``family``, or any) with the best mean over the collections other than ``held``."""
    names = [name for name, (kind, _) in SETTINGS.items() if family is None or kind == family]
    return max(names, key=lambda name: statistics.fmean(v for label, v in table[name].items() if label != held))


def print_row(name: str, cells: Sequence[float], extra: str = "") -> None:
    print(f"{name:<34}" + "".join(f"{value:>12.4f}" for value in cells) + extra)


def against(
    row: Mapping[str, Mapping[str, float]], base: Mapping[str, Mapping[str, float]], plain: Mapping[str, float]
) -> tuple[list[float], str]:
    """A held-out row's means, its worst difference from plain and its p-values against ``base`` (MaxP): paired
    t-test per collection, stratified randomization test on the mean."""
    cells = [mean(values) for values in row.values()]
    worst = min(mean(values) - plain[label] for label, values in row.items())
    ps = [ttest_rel(list(values.values()), list(base[label].values())).pvalue for label, values in row.items()]
    p = randomization_p_value([[v - base[label][q] for q, v in values.items()] for label, values in row.items()])
    return [*cells, statistics.fmean(cells)], f"{worst:>+12.4f}  p " + " ".join(f"{x:.3f}" for x in ps) + f"; {p:.3f}"


def bm25_study(pipeline: PipelineSettings, data: list[Collection]) -> dict[str, dict[str, float]]:
    labels = [item.label for item in data]
    plain = {item.label: item.plain for item in data}
    chosen_by_depth: dict[int, dict[str, dict[str, float]]] = {}
    for depth in TOP_DEPTHS:
        shares = [multi_chunk_share(item.found[depth]) for item in data]
        print(f"\n{'share of top 10 with 2+ chunks':<34}" + "".join(f"{label:>12}" for label in [*labels, "mean"]))
        print_row(f"{depth} chunks asked", [*shares, statistics.fmean(shares)])
        per = {
            name: {
                item.label: metrics.per_query(item.qrels, bm25_alone(pipeline, item, combine, depth, 10), "ndcg@10")
                for item in data
            }
            for name, (_, combine) in SETTINGS.items()
        }
        table = {name: {label: mean(values) for label, values in row.items()} for name, row in per.items()}
        chosen_by_depth[depth] = table
        print(
            f"\nBM25 nDCG@10, {depth} chunks asked".ljust(34)
            + "".join(f"{x:>12}" for x in [*labels, "mean", "worst-plain"])
        )
        print_row("plain", [*plain.values(), statistics.fmean(plain.values())])
        for name, row in table.items():
            worst = min(row[label] - plain[label] for label in labels)
            print_row(name, [*row.values(), statistics.fmean(row.values())], f"{worst:>+12.4f}")
        for family in [*FAMILIES, None]:
            picks = {label: held_out_choice(table, family, label) for label in labels}
            chosen = {label: per[picks[label]][label] for label in labels}
            print_row(f"held out: {family or 'any'}", *against(chosen, per["maxp"], plain))
            print(f"{'':<34}{picks}")
    print(f"\nBM25 Recall@100, {RECALL_DEPTH} chunks asked".ljust(34) + "".join(f"{x:>12}" for x in [*labels, "mean"]))
    for name, (_, combine) in SETTINGS.items():
        recall = [
            mean(metrics.per_query(item.qrels, bm25_alone(pipeline, item, combine, RECALL_DEPTH, 100), "recall@100"))
            for item in data
        ]
        print_row(name, [*recall, statistics.fmean(recall)])
    return chosen_by_depth[TOP_DEPTHS[0]]


def collected(base: PipelineSettings, item: Collection, combine: Combine) -> Collected:
    found = {query: aggregated(value, combine) for query, value in item.found[TOP_DEPTHS[0]].items()}
    return collected_lists(base, found, item.qrels)


def collected_lists(base: PipelineSettings, found: dict[str, Lists], qrels: Qrels) -> Collected:
    def scored(update: dict[str, object]) -> dict[str, float]:
        pipeline = base.model_copy(update={**NEUTRAL, **update})
        run = {query: rank(pipeline, value, 10, None, EMPTY) for query, value in found.items()}
        return metrics.per_query(qrels, run, "ndcg@10")

    shares = SHARES["wide"]
    return Collected(
        found,
        {"knn alone": scored(FIXED["knn alone"])},
        {share: scored({"fusion": "linear", "weights": {"bm25": 1 - share, "knn": share}}) for share in shares},
    )


def hybrid_study(base: PipelineSettings, data: list[Collection], bm25_table: Mapping[str, Mapping[str, float]]) -> None:
    labels = [item.label for item in data]
    built = {
        name: {item.label: collected(base, item, combine) for item in data} for name, (_, combine) in SETTINGS.items()
    }
    for kind in data[0].documents:
        built[kind] = {item.label: collected_lists(base, item.documents[kind], item.qrels) for item in data}
    held: dict[str, dict[str, dict[str, float]]] = {}
    for name, by_label in built.items():
        held[name] = {
            label: fitted(
                [by_label[other] for other in labels if other != label],
                by_label[label],
                predictors,
                SHARES["wide"],
                qpp_fit.DEFAULT_RIDGE,
            )
            for label in labels
        }
    print(
        "\ndefault (qpp held out) nDCG@10".ljust(34)
        + "".join(f"{x:>12}" for x in [*labels, "mean"])
        + "  worst-maxp  p vs maxp (per collection; mean)"
    )
    knn = [mean(built["maxp"][label].scores["knn alone"]) for label in labels]
    print_row("knn alone", [*knn, statistics.fmean(knn)])
    rows = {name: held[name] for name in [*SETTINGS, *data[0].documents]}
    for family in [*FAMILIES, None]:
        picks = {label: held_out_choice(bm25_table, family, label) for label in labels}
        rows[f"bm25-chosen: {family or 'any'}"] = {label: held[picks[label]][label] for label in labels}
        picks_h = {
            label: held_out_choice({n: {lab: mean(held[n][lab]) for lab in labels} for n in SETTINGS}, family, label)
            for label in labels
        }
        rows[f"hybrid-chosen: {family or 'any'}"] = {label: held[picks_h[label]][label] for label in labels}
    for name, row in rows.items():
        print_row(name, *against(row, held["maxp"], {label: mean(held["maxp"][label]) for label in labels}))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    parser.add_argument("--lists-dir", type=Path, required=True)
    parser.add_argument("--hybrid", action="store_true", help="also the default hybrid, qpp refitted held out")
    parser.add_argument("--whole", action="store_true", help="also esbridge's BM25 over whole documents (--hybrid)")
    args = parser.parse_args()
    args.lists_dir.mkdir(parents=True, exist_ok=True)
    base = load_settings(url=args.url)
    with open_embedder(base.embedding) as embedder:
        data = [load(argument, args.url, args.lists_dir, embedder, args.whole) for argument in args.datasets]
    bm25_pipeline = base.pipeline.model_copy(update={**NEUTRAL, **FIXED["bm25 alone"]})
    table = bm25_study(bm25_pipeline, data)
    if args.hybrid:
        hybrid_study(base.pipeline, data, table)


if __name__ == "__main__":
    main()
