"""The same data on 1 and on 3 primaries, dfs on (the default): what depends on the shard count, and how much.

- kNN asks every shard for k candidates and merges them: the same list with the same scores (HNSW per
  shard finds the same neighbours on these sizes).
- BM25 on one field with dfs_query_then_fetch scores with statistics gathered from every shard: the same
  list with the same scores.
- esbridge's full BM25 query (``cross_fields`` over five boosted fields, three empty for SciFact, and a
  ``best_fields`` clause) scores slightly differently even with dfs, while ``cross_fields`` over title and
  body alone does not: OpenSearch blends term statistics across a ``cross_fields`` query's fields on each
  shard while rewriting it, which dfs does not fully cover. So fused lists differ a little. Bound measured
  here: at least 9 of the top 10 in common for every query and fusion (qpp with its predictors, rrf,
  linear, dbsf), 9.5 on average; on all 300 SciFact test queries the default's nDCG@10 was 0.7363 on 1
  shard and 0.7367 on 3 (docs/clusters.md).
- qpp picks the kNN share with the highest predicted nDCG@10, and where two shares are predicted nearly
  alike, BM25's small difference can tip the choice: 2 of these 25 queries chose another share on 3
  shards (0.5 against 0.2, keeping 7 of the top 10; 0.8 against 0.65, keeping 9). The bound for qpp is
  therefore the one above for queries whose share is the same, and at most 3 of 25 queries whose share
  differs.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.config import Settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect_async
from esbridge.engines.base import Dialect
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import SCIFACT, require

SLICE = 600
QUERIES = 25
MAX_SHARE_CHANGES = 3
FUSIONS = ("qpp", "rrf", "linear", "dbsf")


Answers = dict[str, list[SearchResponse]]


def answers(settings: Settings, alias: str, embedder: CachedEmbedder, texts: list[str]) -> Answers:
    async def run() -> Answers:
        engine = connect_async(settings)
        try:
            found: Answers = {}
            for fusion in FUSIONS:
                searcher = HybridSearcher(engine, alias, embedder, PipelineSettings(fusion=fusion))
                found[fusion] = [await searcher.search(SearchRequest(query=text, top_n=10)) for text in texts]
            return found
        finally:
            await engine.close()

    return asyncio.run(run())


def knn_share(response: SearchResponse) -> float | None:
    decision = response.details.fusion_decision
    return decision.knn_share if decision is not None else None


def overlap(a: SearchResponse, b: SearchResponse) -> int:
    return len({hit.id for hit in a.results} & {hit.id for hit in b.results})


def ranked(engine: Engine, alias: str, body: dict[str, object]) -> list[tuple[float, frozenset[str]]]:
    """Scores in order, each with the results sharing it (shards break ties by their own doc order; float32
    scores may print a digit apart); the last group is left out, as the cut at ``size`` may fall inside it."""
    groups: list[tuple[float, set[str]]] = []
    for hit in engine.search(alias, body).hits:
        if groups and math.isclose(hit.score, groups[-1][0], rel_tol=1e-6):
            groups[-1][1].add(hit.id)
        else:
            groups.append((hit.score, {hit.id}))
    return [(score, frozenset(ids)) for score, ids in groups[:-1]]


def same_ranking(a: list[tuple[float, frozenset[str]]], b: list[tuple[float, frozenset[str]]]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(score_a, score_b, rel_tol=1e-6) and ids_a == ids_b
        for (score_a, ids_a), (score_b, ids_b) in zip(a, b, strict=True)
    )


@pytest.fixture
def two_layouts(cluster: Engine, embedder: CachedEmbedder, tmp_path: Path) -> Iterator[tuple[str, str]]:
    source = tmp_path / "slice.jsonl"
    with (require(SCIFACT) / "corpus.jsonl").open(encoding="utf-8") as lines:
        docs = [json.loads(line) for line, _ in zip(lines, range(SLICE), strict=False)]
    source.write_text(
        "\n".join(json.dumps({"id": d["_id"], "title": d["title"], "text": d["text"]}) for d in docs), encoding="utf-8"
    )
    prefix = f"esbridge-cluster-test-{uuid.uuid4().hex[:8]}"
    aliases = (f"{prefix}-one", f"{prefix}-three")
    try:
        for alias, shards in zip(aliases, (1, 3), strict=True):
            params = IndexParameters(dimension=embedder.dimension, shards=shards, replicas=1)
            manager = IndexManager(cluster, alias, params)
            assert (
                ingest(source, engine=cluster, manager=manager, embedder=embedder, options=IngestOptions()).failed == []
            )
            cluster.refresh(alias)
        yield aliases
    finally:
        for info in cluster.list_indices(f"{prefix}*"):
            cluster.delete_index(info.name, missing_ok=True)


def test_one_and_three_shards_rank_alike_with_dfs_within_the_cross_fields_bound(
    two_layouts: tuple[str, str],
    cluster: Engine,
    cluster_kind: Dialect,
    cluster_settings: Settings,
    embedder: CachedEmbedder,
) -> None:
    assert cluster_settings.search.search_type == "dfs_query_then_fetch"  # the default
    with (require(SCIFACT) / "queries.jsonl").open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line, _ in zip(lines, range(QUERIES), strict=False)]
    for text in texts:
        single_field = {"query": {"match": {"body": text}}, "size": 20}
        knn = bodies.knn_body(cluster_kind, embedder.embed([text])[0], k=20, filters=Filters(), num_candidates=100)
        for body in (single_field, knn):
            assert same_ranking(ranked(cluster, two_layouts[0], body), ranked(cluster, two_layouts[1], body)), text
    one, three = (answers(cluster_settings, alias, embedder, texts) for alias in two_layouts)
    for fusion in FUSIONS:
        overlaps = [overlap(a, b) for a, b in zip(one[fusion], three[fusion], strict=True)]
        same = overlaps
        if fusion == "qpp":
            shares = [(knn_share(a), knn_share(b)) for a, b in zip(one[fusion], three[fusion], strict=True)]
            same = [n for n, (x, y) in zip(overlaps, shares, strict=True) if x == y]
            assert len(overlaps) - len(same) <= MAX_SHARE_CHANGES, (shares, overlaps)
        assert min(same) >= 9, (fusion, overlaps)
        assert sum(same) / len(same) >= 9.5, (fusion, overlaps)
        assert all(not a.warnings and not b.warnings for a, b in zip(one[fusion], three[fusion], strict=True))
