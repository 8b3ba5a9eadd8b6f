"""BM25 alone and the default hybrid at several BM25 (k1, b), on a BEIR split: how k1 and b were chosen.

    .venv/bin/python benchmarks/bm25_similarity.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --split train --points 1.2,0.75 0.9,0.4 0.9,0.3 0.7,0.4 1.2,0.4 0.9,0.5

Lucene stores only each field's length in its norms and applies k1 and b when a query is scored, so one
ingested index serves every point: the script closes the index behind the alias, sets
``index.similarity.default``, reopens it, and evaluates; the index's own values are put back at the
end, also after a failure. The index is closed (unsearchable) for a moment at each point: run this on
an evaluation index, never on one that serves users. OpenSearch and Elasticsearch only (the embedded
engine's FTS5 has fixed k1 = 1.2, b = 0.75).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from index_study import study_parser, study_settings

from esbridge.config.settings import Settings
from esbridge.embeddings.factory import open_embedder
from esbridge.engines import connect, resolve_kind
from esbridge.evaluation import report, session
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.methods import configurations


def engine_client(settings: Settings) -> Any:
    """The engine's own client: opening, closing and index settings are not part of esbridge's adapters."""
    if resolve_kind(settings) == "opensearch":
        from opensearchpy import OpenSearch

        from esbridge.engines.opensearch import client_options as opensearch_options

        return OpenSearch(**opensearch_options(settings))
    from elasticsearch import Elasticsearch

    from esbridge.engines.elasticsearch import client_options as elasticsearch_options

    return Elasticsearch(**elasticsearch_options(settings))


def set_similarity(client: Any, index: str, k1: float, b: float) -> None:
    client.indices.close(index=index)
    try:
        client.indices.put_settings(
            index=index, body={"index": {"similarity": {"default": {"type": "BM25", "k1": k1, "b": b}}}}
        )
    finally:
        client.indices.open(index=index)
        wait_until_searchable(client, index)


def wait_until_searchable(client: Any, index: str, timeout_s: float = 60.0) -> None:
    # Polled: the two clients disagree on what a `timeout` argument of cluster.health means.
    deadline = time.monotonic() + timeout_s
    while client.cluster.health(index=index)["status"] not in ("yellow", "green"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{index} did not become searchable within {timeout_s:g}s after reopening")
        time.sleep(0.5)


@contextmanager
def restored_similarity(client: Any, index: str) -> Iterator[tuple[float, float]]:
    settings = client.indices.get_settings(index=index)[index]["settings"]["index"]
    default = settings.get("similarity", {}).get("default", {})
    original = (float(default.get("k1", 1.2)), float(default.get("b", 0.75)))
    try:
        yield original
    finally:
        set_similarity(client, index, *original)


def main() -> None:
    parser = study_parser(__doc__, split="train")
    parser.add_argument("--methods", default="bm25,default")
    parser.add_argument("--points", nargs="+", default=["1.2,0.75", "0.9,0.4"], help="k1,b pairs")
    args = parser.parse_args()
    points = [tuple(float(part) for part in point.split(",")) for point in args.points]
    if any(len(point) != 2 for point in points):
        parser.error("each point is k1,b, e.g. 0.9,0.4")

    settings = study_settings(args)
    if resolve_kind(settings) == "embedded":
        parser.error("the embedded engine's BM25 (SQLite FTS5) has fixed k1 and b")
    adapter = connect(settings)
    try:
        targets = adapter.alias_targets(settings.index)
    finally:
        adapter.close()
    if len(targets) != 1:
        parser.error(f"{settings.index!r} must be an alias of one index, found {targets}")
    judged = judged_queries(args.dataset, args.split)
    client = engine_client(settings)
    names = args.methods.split(",")
    print(f"{'k1':>5} {'b':>5} " + " ".join(f"{name:>10}" for name in names) + "   (nDCG@10)")
    with open_embedder(settings.embedding) as embedder, restored_similarity(client, targets[0]) as original:
        print(f"# the index's own values, restored at the end: k1={original[0]:g} b={original[1]:g}")
        for k1, b in points:
            set_similarity(client, targets[0], k1, b)
            outcome = session.run(settings, judged, configurations(args.methods, settings.pipeline), embedder)
            rows = {row.name: row for row in report.score(judged.qrels, outcome.outcomes, baseline=None)}
            print(f"{k1:>5g} {b:>5g} " + " ".join(f"{rows[name].scores['ndcg@10']:>10.4f}" for name in names))


if __name__ == "__main__":
    main()
