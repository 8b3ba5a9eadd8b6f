"""The configurations an evaluation compares, by name: ``bm25``, ``rrf``, ``linear-z+graph``, ``default``, ...

A name is a base method from ``METHODS`` followed by optional ``+graph`` / ``+recency`` / ``+rerank``
switches (``+rerank``: the configured cross-encoder re-ranks the top ``pipeline.rerank.top``). A base
method is a function from the configured pipeline to a ``Configuration``: it changes what decides the
ranking (retrievers, fusion method, weights, fusion parameters) and leaves the rest of the pipeline
(timeouts, graph and recency parameters, ...) as configured. Graph expansion and recency are off unless
switched on by a suffix, except in ``default`` and ``configured``, which keep their pipeline's own.
Register more with ``METHODS[name] = factory``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from esbridge.config.pipeline import PipelineSettings
from esbridge.errors import ConfigError

SWITCHES = ("graph", "recency", "rerank")

_RANKING_FIELDS = ("retrievers", "fusion", "weights", "fusion_params", "fusion_level")


@dataclass(frozen=True)
class Configuration:
    """One row of an evaluation: a pipeline, and how each request sets the per-request switches."""

    name: str
    pipeline: PipelineSettings
    graph: bool | None = False
    """None: the pipeline's own ``graph.enabled``."""
    recency: bool | None = False
    native: bool = False
    """Fused by the engine (``SearchRequest.mode = "native"``) instead of on the client."""


MethodFactory = Callable[[str, PipelineSettings], Configuration]


def _ranking(base: PipelineSettings, **ranking: Any) -> PipelineSettings:
    """``base`` with the fields that decide the ranking replaced; unnamed ones get the product default."""
    defaults = PipelineSettings()
    update = {name: ranking.get(name, getattr(defaults, name)) for name in _RANKING_FIELDS}
    return base.model_copy(update=update)


def _fused(fusion: str, **params: float | str) -> MethodFactory:
    def factory(name: str, base: PipelineSettings) -> Configuration:
        return Configuration(
            name,
            _ranking(base, fusion=fusion, weights={"bm25": 1.0, "knn": 1.0}, fusion_params=dict(params)),
        )

    return factory


def _alone(retriever: str) -> MethodFactory:
    def factory(name: str, base: PipelineSettings) -> Configuration:
        return Configuration(name, _ranking(base, retrievers=[retriever], weights={retriever: 1.0}))

    return factory


def _default(name: str, base: PipelineSettings) -> Configuration:
    return Configuration(name, _ranking(base), graph=None, recency=None)


def _configured(name: str, base: PipelineSettings) -> Configuration:
    return Configuration(name, base, graph=None, recency=None)


def _native(of: MethodFactory) -> MethodFactory:
    """The engine fusing what ``of`` fuses (an OpenSearch search pipeline or an Elasticsearch retriever).

    ``qpp`` picks its weights per query, which no engine can; its native counterpart is its fixed-weight
    base, min-max ``linear`` at the configured weights, which is what an engine's hybrid query computes.
    """

    def factory(name: str, base: PipelineSettings) -> Configuration:
        pipeline = of(name, base).pipeline
        if pipeline.fusion == "qpp":
            pipeline = pipeline.model_copy(update={"fusion": "linear", "fusion_params": {}})
        return Configuration(name, pipeline, native=True)

    return factory


METHODS: dict[str, MethodFactory] = {
    "bm25": _alone("bm25"),
    "knn": _alone("knn"),
    "rrf": _fused("rrf", k=60),
    "linear": _fused("linear", normalization="min_max"),
    "linear-z": _fused("linear", normalization="z_score"),
    "linear-l2": _fused("linear", normalization="l2"),
    # OpenSearch's normalization-processor on the client (docs/fusion.md): min-max with its 0.001 floor,
    # arithmetic mean; what its native hybrid ranks like, given the same hits.
    "linear-opensearch": _fused("linear", normalization="min_max", min_max_floor=0.001, combination="arithmetic_mean"),
    "dbsf": _fused("dbsf"),
    "adaptive": _fused("adaptive"),
    "qpp": _fused("qpp"),
    "default": _default,
    "configured": _configured,
    "native": _native(_default),
    "native-rrf": _native(_fused("rrf", k=60)),
    "native-configured": _native(_configured),
}


def configuration(name: str, base: PipelineSettings | None = None) -> Configuration:
    """The configuration a method name stands for, e.g. ``rrf``, ``linear-z+graph``, ``default+recency``."""
    method, *switches = name.strip().split("+")
    factory = METHODS.get(method)
    if factory is None:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(METHODS)} (add +graph, +recency or +rerank)")
    unknown = sorted(set(switches) - set(SWITCHES))
    if unknown:
        raise ConfigError(f"unknown switch {'+'.join(unknown)!r} in {name!r}; known: +graph, +recency, +rerank")
    made = factory(name.strip(), base or PipelineSettings())
    on = dict.fromkeys(switches, True)
    pipeline = made.pipeline
    # Re-ranking is off unless switched on, except in ``default`` and ``configured`` (graph None), which keep
    # their pipeline's own.
    reranks = bool(on.get("rerank")) or (made.graph is None and pipeline.rerank.enabled)
    if reranks != pipeline.rerank.enabled:
        pipeline = pipeline.model_copy(update={"rerank": pipeline.rerank.model_copy(update={"enabled": reranks})})
    return Configuration(made.name, pipeline, on.get("graph", made.graph), on.get("recency", made.recency), made.native)


def configurations(names: str, base: PipelineSettings | None = None) -> list[Configuration]:
    """Configurations for a comma-separated list of method names, in the order given. A configuration named twice
    (``default,default``, or ``rrf+graph+recency`` and ``rrf+recency+graph``) is refused: it would be one row, or two
    identical ones, where the list promised two, so the list is likely not what was meant."""
    chosen = [part.strip() for part in names.split(",") if part.strip()]
    if not chosen:
        raise ConfigError("no method named; e.g. --methods bm25,knn,rrf,default")
    first: dict[tuple[str, frozenset[str]], str] = {}
    for name in chosen:
        method, *switches = name.split("+")
        spelled = first.setdefault((method, frozenset(switches)), name)
        if spelled != name:
            raise ConfigError(f"{spelled!r} and {name!r} are one configuration; name each configuration once")
        if chosen.count(name) > 1:
            raise ConfigError(f"{name!r} is named twice; name each configuration once")
    return [configuration(name, base) for name in chosen]
