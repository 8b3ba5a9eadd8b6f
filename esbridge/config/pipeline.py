"""The ``[pipeline]`` settings: how a search is run, fused, expanded and shaped.

Every value here is a default that a single request may override (see ``SearchRequest``). The fusion
method and weights are placeholders until the evaluation harness chooses them by evidence.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphSettings(_Section):
    enabled: bool = False
    seeds: int = Field(default=5, ge=1, le=100, description="top results whose links are followed")
    hops: int = Field(default=1, ge=1, le=2)
    per_seed: int = Field(default=5, ge=1, le=100, description="neighbours kept per seed")
    direction: Literal["out", "in", "both"] = "both"
    weight: float = Field(default=0.5, ge=0, allow_inf_nan=False)
    decay: float = Field(default=0.5, gt=0, le=1)
    prior: Literal["none", "degree", "pagerank"] = "none"
    prior_weight: float = Field(default=0.1, ge=0, allow_inf_nan=False)
    placement: Literal["below_seeds", "below_all"] = Field(
        default="below_seeds",
        description="below_seeds: a neighbour scores weight x its seed's score and may outrank weaker direct "
        "results, never its seeds; below_all: only below every direct result",
    )
    min_link_weight: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="links lighter than this are not followed (a link without a weight weighs 1)",
    )
    mode: Literal["expand", "rescore", "lift"] = Field(
        default="expand",
        description="expand: linked documents join the results; rescore: results linked with other results "
        "gain rescore_weight x their mean score, nothing joins; lift: results below the first keep_top gain "
        "rescore_weight x the link-weighted scores of the top seeds they are linked with, nothing joins",
    )
    rescore_weight: float = Field(
        default=0.5,
        ge=0,
        allow_inf_nan=False,
        description="rescore and lift: how much of the linked results' scores a result gains",
    )
    keep_top: int = Field(default=10, ge=1, le=1000, description="lift: documents that keep their places")
    link_weighting: Literal["none", "proportional"] = Field(
        default="none",
        description="proportional: a neighbour's share is also multiplied by its link's weight over its seed's "
        "heaviest link",
    )


class RecencySettings(_Section):
    enabled: bool = True
    mode: Literal["tiers", "half_life"] = "tiers"
    tiers: list[tuple[float, float]] = Field(
        default=[(7.0, 1.2), (30.0, 1.1)], description="(max age in days, multiplier), youngest first"
    )
    half_life_days: float = Field(default=14.0, gt=0)
    boost: float = Field(default=0.2, ge=0, description="half-life mode: multiplier of a brand-new document - 1")

    @model_validator(mode="after")
    def _rules_usable(self) -> RecencySettings:
        # Checked when the settings are read, not by the first search; both rules, whichever mode is on.
        from esbridge.query.recency import rule_from  # esbridge.query.recency imports this module

        for mode in ("tiers", "half_life"):
            rule_from(self.model_copy(update={"mode": mode}))
        return self


class ShapingSettings(_Section):
    collapse: bool = True
    floor: float = Field(default=0.0, ge=0, le=1, description="drop results below this fraction of the best")
    cap_types: bool = False
    type_share: float = Field(default=0.6, gt=0, le=1)


class RerankSettings(_Section):
    enabled: bool = False
    name: str = Field(default="cross-encoder", description="a registered re-ranker (esbridge.rerankers)")
    model: str | None = Field(
        default="cross-encoder/ms-marco-MiniLM-L-12-v2", description="cross-encoder model name or local folder"
    )
    backend: Literal["torch", "onnx"] = Field(
        default="torch", description="torch (sentence-transformers) or onnx (ONNX Runtime)"
    )
    precision: Literal["fp32", "int8"] = Field(default="fp32", description="onnx backend: fp32 or int8 weights")
    # Chosen on 40 SciFact train queries with the ms-marco-MiniLM-L-12-v2 cross-encoder (docs/reranking.md):
    # the best of depths 10/20/30 and weights 0.3/0.5/0.7/1, though no variant differed significantly.
    top: int = Field(default=30, ge=1, le=500, description="how many of the best candidates are re-ranked")
    weight: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="share of the re-ranker's score in the re-ranked candidates' order (the rest: the fused "
        "score); 1 = the re-ranker's order alone",
    )
    batch_size: int = Field(default=16, ge=1)
    device: str = "cpu"
    # The int8 cross-encoder took at most 7.7 s for the default top 30 and 6.1 s for the top 50 on 2 shared cores
    # (docs/reranking.md): 15 s is twice that. The sidecar cuts it to what is left of its request's time.
    timeout_s: float = Field(
        default=15.0,
        gt=0,
        allow_inf_nan=False,
        description="seconds a search waits for the re-ranker; past them the fused order is kept, with a warning",
    )


class ConceptSettings(_Section):
    enabled: bool = Field(default=False, description="build the concept index at ingest and expand queries with it")
    terms: int = Field(default=3, ge=1, le=20, description="nearest concept terms appended to the semantic query")
    vocabulary: int = Field(default=2000, ge=10, le=100000, description="frequent terms kept at ingest")


class CacheSettings(_Section):
    embeddings: int = Field(default=1024, ge=0, description="query embeddings kept (0 = off)")
    embeddings_ttl_s: float = Field(default=3600.0, gt=0)
    results: int = Field(default=256, ge=0, description="search responses kept (0 = off)")
    results_ttl_s: float = Field(default=30.0, gt=0)


FusionMode = Literal["auto", "native", "client"]


def _number_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value.strip())
        except ValueError:
            pass
    return value


class PipelineSettings(_Section):
    mode: FusionMode = Field(
        default="auto",
        description=(
            "where fusion runs: auto = on the engine when it supports the configured method (native-hybrid), "
            "else in esbridge; native = on the engine, with a warning when it cannot; client = always in esbridge"
        ),
    )
    retrievers: list[str] = Field(
        default_factory=lambda: ["bm25", "knn"], min_length=1, description="registered retrievers to run"
    )
    # Chosen on SciFact's train queries (docs/evaluation-scifact.md): min-max linear with equal weights had the best
    # nDCG@10 and the best neighbourhood of the fixed-weight grid; qpp, which picks the weight per query
    # around it, beat that in cross-validation on train (0.7436 against 0.7358), and on test on every engine.
    fusion: str = Field(default="qpp", description="a registered fusion method: qpp, linear, rrf, dbsf, adaptive, ...")
    weights: dict[str, float] = Field(default_factory=lambda: {"bm25": 1.0, "knn": 1.0})
    fusion_level: Literal["chunk", "document"] = Field(
        default="chunk",
        description="fuse chunks as retrieved, or each document's best chunk per retriever (esbridge.query.documents)",
    )
    fusion_params: dict[str, Any] = Field(
        default_factory=dict, description="e.g. k = 60 for rrf; model = {...} for qpp (esbridge tune writes it)"
    )
    knn_per_type: list[str] = Field(
        default_factory=list,
        description="entity types that each get their own kNN request (knn_k_per_type results each), so that a "
        "minority type still has candidates when one type holds most records (the types not listed share one more); "
        "empty: one kNN over everything",
    )
    knn_k_per_type: int = Field(default=30, ge=1, le=10_000)
    top_k_multiplier: float = Field(default=2.0, ge=1)
    top_k_min: int = Field(default=10, ge=10)
    top_n_max: int = Field(default=50, ge=1, le=1000)
    # Concurrent requests measured faster than one _msearch once the query is embedded on one thread:
    # BM25 then runs on the engine while the other core embeds (docs/benchmarks.md, end-to-end latency per mode).
    execution: Literal["concurrent", "msearch"] = Field(
        default="concurrent",
        description="concurrent requests (BM25 in flight while the query is embedded), or one _msearch after embedding",
    )
    bm25_timeout_s: float = Field(default=5.0, gt=0)
    knn_timeout_s: float = Field(default=5.0, gt=0)
    timeouts_s: dict[str, float] = Field(default_factory=dict, description="timeouts of other retrievers by name")
    embed_timeout_s: float = Field(default=5.0, gt=0)
    graph: GraphSettings = GraphSettings()
    recency: RecencySettings = RecencySettings()
    shaping: ShapingSettings = ShapingSettings()
    rerank: RerankSettings = RerankSettings()
    concepts: ConceptSettings = ConceptSettings()
    cache: CacheSettings = CacheSettings()

    @field_validator("fusion_params", mode="before")
    @classmethod
    def _numbers_from_text(cls, value: Any) -> Any:
        # Environment variables give every value as text (ESBRIDGE_PIPELINE__FUSION_PARAMS__K=30), and the
        # union would keep "30" a string; a parameter that reads as a number is one.
        if not isinstance(value, dict):
            return value
        return {key: _number_or_text(item) for key, item in value.items()}

    @model_validator(mode="after")
    def _weights_non_negative(self) -> PipelineSettings:
        negative = sorted(name for name, weight in self.weights.items() if weight < 0)
        if negative:
            raise ValueError(f"pipeline.weights must be >= 0, not for {negative}")
        return self

    def timeout_s(self, retriever: str) -> float:
        defaults = {"bm25": self.bm25_timeout_s, "knn": self.knn_timeout_s}
        return self.timeouts_s.get(retriever, defaults.get(retriever, max(self.bm25_timeout_s, self.knn_timeout_s)))

    def top_k(self, top_n: int) -> int:
        """Depth asked of each retriever: max(top_k_min, multiplier x top_n)."""
        return max(self.top_k_min, round(self.top_k_multiplier * top_n))
