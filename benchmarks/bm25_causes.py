"""Where esbridge's BM25 loses to plain BM25: chunking, overlap, k1/b, the request body, the depth, one at a time.

    .venv/bin/python benchmarks/bm25_causes.py ../shared/data/beir/scifact@train ../shared/data/classic/cisi \
        ../shared/data/classic/med --url http://127.0.0.1:9200

For each collection the corpus is read and chunked by esbridge's own code (no embedding: BM25 needs no
vectors) and indexed with esbridge's mapping into ``abl-<folder>-<chunking>`` (seconds to a minute each;
kept, so a re-run reuses them), which is scored at each ``--points`` k1,b (closing and reopening it, as
``bm25_similarity.py`` does). The chunkings: esbridge's (200 word pieces, 32 overlap),
the same without overlap, and one chunk per document. Each index is searched with several request
bodies: esbridge's (``bodies.bm25_body``), esbridge's fields without the exact (path, code) clause,
title 1.5 and body only, and plain BM25's ``best_fields`` query over title and body (tie-breaker 0.5).
A ranking of chunks becomes one of documents by each document's best chunk, from the ``--depth`` chunks
asked for (the pipeline asks 20 for a top 10); nDCG@10 is over the first 10 documents. ``plain`` is
``plain_bm25.py``'s index and query, for reference.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bm25_similarity import engine_client, restored_similarity, set_similarity
from plain_bm25 import plain_index, plain_run, print_against_plain

from esbridge.config import load_settings
from esbridge.config.fields import DEFAULT_FIELD_MAP
from esbridge.engines import connect
from esbridge.engines.base import JSON, BulkAction
from esbridge.evaluation import metrics
from esbridge.evaluation.collections import parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.ingest.chunking import approximate_token_count, chunk_document
from esbridge.ingest.documents import index_document
from esbridge.ingest.model import Document
from esbridge.ingest.sources import read_source
from esbridge.mappings.schema import IndexParameters, render_index
from esbridge.query import bodies
from esbridge.query.models import Filters

CHUNKINGS = {"c200o32": (200, 32), "c200o0": (200, 0), "doc": (100_000, 0)}
POINTS = ((1.2, 0.4), (1.2, 0.75))
TEXT = dict(bodies.DEFAULT_TEXT_BOOSTS)
EXACT = dict(bodies.DEFAULT_EXACT_BOOSTS)


def esbridge_query(text_boosts: dict[str, float], exact_boosts: dict[str, float]) -> Callable[[str, int], JSON]:
    fields = DEFAULT_FIELD_MAP.model_copy(update={"text": text_boosts, "exact": exact_boosts})

    def body(text: str, size: int) -> JSON:
        return bodies.bm25_body(
            "opensearch", text, size=size, filters=Filters(), fields=fields, source_fields=("doc_id",)
        )

    return body


def best_fields(fields: list[str], tie: float = 0.5) -> Callable[[str, int], JSON]:
    def body(text: str, size: int) -> JSON:
        text = bodies.bounded_text(text, len(fields))
        query = {"multi_match": {"query": text, "type": "best_fields", "fields": fields, "tie_breaker": tie}}
        return {"size": size, "_source": ["doc_id"], "query": query}

    return body


QUERIES: dict[str, Callable[[str, int], JSON]] = {
    "esbridge body": esbridge_query(TEXT, EXACT),
    "no exact clause": esbridge_query(TEXT, {}),
    "cross title^1.5 body": esbridge_query({"title": 1.5, "body": 1.0}, {}),
    "cross title body": esbridge_query({"title": 1.0, "body": 1.0}, {}),
    "best_fields title body": best_fields(["title", "body"]),
}


def chunk_sources(folder: Path, max_tokens: int, overlap: int) -> list[dict[str, Any]]:
    documents = [item for item in read_source(folder, "beir") if isinstance(item, Document)]
    sources = []
    for doc in documents:
        for chunk in chunk_document(
            doc,
            max_tokens=max_tokens,
            overlap_tokens=min(overlap, max_tokens // 4),
            min_tokens=min(24, max_tokens // 4),
            count_tokens=approximate_token_count,
        ):
            sources.append(index_document(chunk, source="abl", vector=None))
    return sources


def build(engine: Any, index: str, sources: list[dict[str, Any]], k1: float, b: float) -> None:
    if engine.index_exists(index):
        return
    engine.create_index(index, render_index("opensearch", IndexParameters(bm25_k1=k1, bm25_b=b)))
    actions = [BulkAction("index", str(source["chunk_id"]), source) for source in sources]
    for start in range(0, len(actions), 500):
        result = engine.bulk(index, actions[start : start + 500])
        if result.failed:
            raise SystemExit(f"{index}: {len(result.failed)} chunks not written: {result.failed[0]}")
    engine.refresh(index)


def documents(hits: list[str], top: int = 10) -> dict[str, float]:
    ranked = list(dict.fromkeys(hits))[:top]
    return {doc: float(len(ranked) - position) for position, doc in enumerate(ranked)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    parser.add_argument("--depth", type=int, nargs="+", default=[20], help="chunks asked for (default 20)")
    parser.add_argument("--queries", nargs="+", default=list(QUERIES), choices=list(QUERIES))
    parser.add_argument("--chunkings", nargs="+", default=list(CHUNKINGS), choices=list(CHUNKINGS))
    parser.add_argument("--points", nargs="+", default=[f"{k1:g},{b:g}" for k1, b in POINTS], help="k1,b ...")
    args = parser.parse_args()
    table: dict[str, dict[str, float]] = {}
    labels = []
    for argument in args.datasets:
        collection = parse_collection(argument, "test")
        labels.append(collection.label)
        name = collection.folder.resolve().name.lower()
        judged = judged_queries(collection.folder, collection.split)
        qrels = metrics.qrels(judged.qrels)
        settings = load_settings(url=args.url)
        engine = connect(settings)
        client = engine_client(settings)
        try:
            plain_index(engine, collection.folder, f"plain-{name}")
            plain = plain_run(engine, f"plain-{name}", judged.queries)
            table.setdefault("plain", {})[collection.label] = metrics.mean_scores(qrels, plain, ["ndcg@10"])["ndcg@10"]
            for chunking in args.chunkings:
                index = f"abl-{name}-{chunking}"
                if not engine.index_exists(index):
                    sources = chunk_sources(collection.folder, *CHUNKINGS[chunking])
                    print(f"{collection.label}: {chunking} {len(sources)} chunks", flush=True)
                    build(engine, index, sources, 1.2, 0.4)
                for point in args.points:
                    k1, b = (float(value) for value in point.split(","))
                    with restored_similarity(client, index):
                        set_similarity(client, index, k1, b)
                        for query_name in args.queries:
                            for depth in args.depth:
                                run = {}
                                for query, text in judged.queries.items():
                                    found = engine.search(index, QUERIES[query_name](text, depth))
                                    run[query] = documents([str(hit.source["doc_id"]) for hit in found.hits])
                                key = f"{chunking} {k1:g}/{b:g} {query_name} d{depth}"
                                score = metrics.mean_scores(qrels, run, ["ndcg@10"])["ndcg@10"]
                                table.setdefault(key, {})[collection.label] = score
        finally:
            client.close()
            engine.close()
    print_against_plain(table, labels, 48)


if __name__ == "__main__":
    main()
