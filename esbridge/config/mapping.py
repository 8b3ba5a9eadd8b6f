"""The ``[mapping]`` section: the parameters an index is built with."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Lucene's k1 with a lower b than its 0.75: on the mean over SciFact train, CISI and MED it gives BM25
# alone and the default hybrid their best figures of the points tried (docs/evaluation-bm25.md).
DEFAULT_BM25_K1 = 1.2
DEFAULT_BM25_B = 0.4


class MappingSettings(_Section):
    """Index parameters: HNSW graph and BM25. Changing any but ef_search needs a new index version."""

    hnsw_m: int = Field(default=16, ge=2, le=100)
    hnsw_ef_construction: int = Field(default=100, ge=10, le=4096)
    hnsw_ef_search: int = Field(default=100, ge=1, le=10000, description="candidates searched per kNN query")
    bm25_k1: float = Field(default=DEFAULT_BM25_K1, ge=0)
    bm25_b: float = Field(default=DEFAULT_BM25_B, ge=0, le=1)
    shards: int = Field(default=1, ge=1, le=1024)
    replicas: int = Field(default=0, ge=0, le=16)
    vector_encoding: Literal["float", "int8", "int4", "bbq"] = Field(
        default="float",
        description="vector storage: float, int8 (both engines), int4 or bbq (Elasticsearch); docs/clusters.md",
    )
