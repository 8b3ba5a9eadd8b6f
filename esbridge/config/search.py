"""The ``[search]`` settings: how searches are spread over the shards and copies of a multi-node cluster.

Both are query-string parameters of ``_search`` (and header fields of ``_msearch``) that OpenSearch and
Elasticsearch share; a one-shard index behaves the same with any of them. Measured on SciFact with 1 and 3
shards, with and without dfs: docs/clusters.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SearchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # On SciFact with 3 primaries, per-shard statistics cost the default hybrid 0.007 nDCG@10 (0.7292 against
    # 0.7363 on one shard) and dfs gave it back (0.7367) for about 1 ms more per BM25 request; a one-shard
    # search skips the DFS phase (docs/clusters.md).
    search_type: Literal["query_then_fetch", "dfs_query_then_fetch"] = Field(
        default="dfs_query_then_fetch",
        description="dfs_query_then_fetch first gathers term statistics from every shard so BM25 scores as one "
        "index would; query_then_fetch scores each shard with its own statistics",
    )
    preference: str = Field(
        default="query",
        min_length=1,
        max_length=200,
        description="which copy of each shard answers: 'query' = the same copies for the same request (stable "
        "scores, load still spread over queries), 'session' = the same copies for one client, 'engine' = the "
        "engine's adaptive replica selection, anything else is passed to the engine as is (e.g. _local)",
    )
    allow_model_mismatch: bool = Field(
        default=False,
        description="search an index whose vectors another model made (its mapping's _meta records which) instead "
        "of refusing; the answer then carries a warning naming both models (docs/model-records.md)",
    )
