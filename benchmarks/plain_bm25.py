"""Plain BM25 as the BEIR paper ran it, beside esbridge's BM25: does a boost, k1/b or chunking cost anywhere?

    .venv/bin/python benchmarks/plain_bm25.py ../shared/data/beir/scifact@train ../shared/data/classic/cisi \
        ../shared/data/classic/med --url http://127.0.0.1:9200

"Plain" is one engine document per corpus record with ``title`` and ``text`` analysed by the built-in
``english`` analyzer, Lucene's default BM25 (k1 1.2, b 0.75), and a ``multi_match`` of type
``best_fields`` over both with tie_breaker 0.5: the BM25 baseline of BEIR (Thakur et al., NeurIPS 2021
Datasets and Benchmarks). It is built in ``plain-<folder>`` on an OpenSearch or Elasticsearch node
(indexing needs no vectors: seconds). esbridge's BM25 is the ``bm25`` configuration of ``esbridge eval``
on ``eval-<folder>`` (ingested already), collapsed to documents the same way. Prints nDCG@10 of both per
collection with the difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from esbridge.config import load_settings
from esbridge.embeddings.factory import open_embedder
from esbridge.engines import connect
from esbridge.engines.base import BulkAction
from esbridge.evaluation import collections, metrics, session
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.methods import configurations

PLAIN_MAPPING = {
    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
    "mappings": {
        "properties": {
            "title": {"type": "text", "analyzer": "english"},
            "text": {"type": "text", "analyzer": "english"},
        }
    },
}


def plain_index(engine: Any, folder: Any, index: str) -> None:
    if engine.index_exists(index):
        return
    engine.create_index(index, PLAIN_MAPPING)
    with (folder / "corpus.jsonl").open(encoding="utf-8") as corpus:
        records = [json.loads(line) for line in corpus if line.strip()]
    actions = [
        BulkAction("index", str(record["_id"]), {"title": record.get("title") or "", "text": record.get("text") or ""})
        for record in records
    ]
    for start in range(0, len(actions), 500):
        result = engine.bulk(index, actions[start : start + 500])
        if result.failed:
            raise SystemExit(f"plain index {index}: {len(result.failed)} records not written: {result.failed[0]}")
    engine.refresh(index)


def plain_run(engine: Any, index: str, queries: dict[str, str], size: int = 10) -> dict[str, dict[str, float]]:
    run = {}
    for query, text in queries.items():
        body = {
            "size": size,
            "_source": False,
            "query": {
                "multi_match": {"query": text, "type": "best_fields", "fields": ["title", "text"], "tie_breaker": 0.5}
            },
        }
        result = engine.search(index, body)
        run[query] = {hit.id: hit.score for hit in result.hits}
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    args = parser.parse_args()
    print(f"{'collection':<16}{'plain BM25':>12}{'esbridge bm25':>15}{'difference':>12}")
    for argument in args.datasets:
        collection = collections.parse_collection(argument, "test")
        name = collection.folder.resolve().name.lower()
        judged = judged_queries(collection.folder, collection.split)
        settings = load_settings(url=args.url, index=f"eval-{name}")
        engine = connect(settings)
        try:
            plain_index(engine, collection.folder, f"plain-{name}")
            plain = plain_run(engine, f"plain-{name}", judged.queries)
        finally:
            engine.close()
        qrels = metrics.qrels(judged.qrels)
        plain_ndcg = metrics.mean_scores(qrels, plain, ["ndcg@10"])["ndcg@10"]
        with open_embedder(settings.embedding) as embedder:
            outcome = session.run(settings, judged, configurations("bm25", settings.pipeline), embedder)
        ours = metrics.mean_scores(qrels, outcome.outcomes[0].top, ["ndcg@10"])["ndcg@10"]
        print(f"{collection.label:<16}{plain_ndcg:>12.4f}{ours:>15.4f}{ours - plain_ndcg:>+12.4f}")


def print_against_plain(table: dict[str, dict[str, float]], labels: list[str], width: int) -> None:
    """One row of nDCG@10 per configuration of ``table`` (which holds a ``plain`` row): each collection, the
    mean, and the configuration's worst difference from plain BM25 over the collections."""
    print(f"{'BM25 nDCG@10':<{width}}" + "".join(f"{label:>15}" for label in [*labels, "mean", "worst vs plain"]))
    for key, row in table.items():
        cells = [row[label] for label in labels]
        worst = min(row[label] - table["plain"][label] for label in labels)
        print(
            f"{key:<{width}}"
            + "".join(f"{value:>15.4f}" for value in [*cells, statistics.fmean(cells)])
            + f"{worst:>+15.4f}"
        )


if __name__ == "__main__":
    main()
