"""Engine-side fusion re-computed in Python, for engines that lack it.

The local OpenSearch has no neural-search plugin (it is not on Maven Central) and the local
Elasticsearch has no rank-rrf module and a basic licence, so neither fuses natively here. To test
esbridge's native path end to end anyway, ``EmulatedNativeEngine`` wraps a real engine: it runs each
sub-query of a ``hybrid`` query (or each child of an ``rrf``/``linear`` retriever) on that engine, then
fuses the hits the way the engine's own code does:

* OpenSearch, from opensearch-project/neural-search ``processor/``: ``RRFNormalizationTechnique``
  (1 / (rank_constant + rank), ranks from 1), ``RRFScoreCombinationTechnique`` (weighted sum),
  ``MinMaxScoreNormalizationTechnique`` (lowest hit 0.001, equal scores 1.0), ``L2ScoreNormalizationTechnique``,
  ``ArithmeticMeanScoreCombinationTechnique`` with ``ScoreCombiner`` (a sub-query that missed a document
  counts 0.0 and its weight), and weights validated as in ``ScoreCombinationUtil`` (in [0, 1], sum 1).
* Elasticsearch, from the rrf and linear retriever reference pages: weighted RRF; linear as the sum of
  weight x normalised score with ``minmax`` (lowest 0) or ``l2_norm``.

It is a model of the engines, written from their source and documentation independently of esbridge's
fusion code; where a real engine has the feature, tests/integration/test_native_hybrid.py runs the same
checks against it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.engines.base import AsyncEngine, Dialect, Hit, SearchResult

Ranked = list[tuple[str, float]]


class EmulatedNativeEngine:
    """An ``AsyncEngine`` that answers native hybrid bodies by emulation and everything else as ``inner`` does."""

    def __init__(self, inner: AsyncEngine, *, fail_native: Exception | None = None) -> None:
        self.inner = inner
        self.fail_native = fail_native
        self.native_bodies: list[Mapping[str, Any]] = []
        self.plain_bodies: list[Mapping[str, Any]] = []

    @property
    def dialect(self) -> Dialect:
        return self.inner.dialect

    @property
    def url(self) -> str:
        return self.inner.url

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "hybrid" in body.get("query", {}) or "retriever" in body:
            self.native_bodies.append(body)
            if self.fail_native is not None:
                raise self.fail_native
            if "retriever" in body:
                return await self._elasticsearch(index, body)
            return await self._opensearch(index, body)
        self.plain_bodies.append(body)
        return await self.inner.search(index, body)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        self.plain_bodies.extend(bodies)
        return await self.inner.msearch(index, bodies)

    async def close(self) -> None:
        await self.inner.close()

    async def _opensearch(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        size = int(body["size"])
        hybrid = body["query"]["hybrid"]
        depth = int(hybrid.get("pagination_depth", size))
        lists, sources = [], {}
        for query in hybrid["queries"]:
            result = await self.inner.search(index, {"size": depth, "_source": body["_source"], "query": query})
            lists.append([(hit.id, hit.score) for hit in result.hits])
            sources.update({hit.id: hit.source for hit in result.hits})
        fused = opensearch_fuse(body["search_pipeline"], lists)[:size]
        return _result(fused, sources)

    async def _elasticsearch(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        size = int(body["size"])
        ((kind, spec),) = body["retriever"].items()
        window = int(spec.get("rank_window_size", size))
        lists, sources, weights, normalizers = [], {}, [], []
        for child in spec["retrievers"]:
            retriever = child.get("retriever", child)
            weights.append(float(child.get("weight", 1.0)))
            normalizers.append(str(child.get("normalizer", "none")))
            if "standard" in retriever:
                request = {"size": window, "_source": body["_source"], "query": retriever["standard"]["query"]}
            else:
                request = {"size": window, "_source": body["_source"], "knn": retriever["knn"]}
            result = await self.inner.search(index, request)
            lists.append([(hit.id, hit.score) for hit in result.hits[:window]])
            sources.update({hit.id: hit.source for hit in result.hits})
        if kind == "rrf":
            fused = _weighted_sum(
                [_reciprocal_ranks(run, int(spec.get("rank_constant", 60))) for run in lists], weights
            )
        else:
            normalized = [_es_normalize(run, name) for run, name in zip(lists, normalizers, strict=True)]
            fused = _weighted_sum(normalized, weights)
        return _result(fused[:size], sources)


def opensearch_fuse(pipeline: Mapping[str, Any], lists: Sequence[Ranked]) -> Ranked:
    """What OpenSearch's phase-results processor makes of the sub-queries' ranked hits (one shard)."""
    ((name, config),) = pipeline["phase_results_processors"][0].items()
    combination = config.get("combination", {})
    given = combination.get("parameters", {}).get("weights")
    if given is not None and (
        any(not 0.0 <= w <= 1.0 for w in given) or not math.isclose(sum(given), 1.0, abs_tol=0.01)
    ):
        raise ValueError(f"OpenSearch refuses weights {given}: each in [0, 1], summing to 1")
    weights = list(given) if given is not None else [1.0] * len(lists)
    if name == "score-ranker-processor":
        constant = int(combination.get("rank_constant", 60))
        return _weighted_sum([_reciprocal_ranks(run, constant) for run in lists], weights)
    technique = config.get("normalization", {}).get("technique", "min_max")
    normalized = [_os_min_max(run) if technique == "min_max" else _os_l2(run) for run in lists]
    if combination.get("technique", "arithmetic_mean") != "arithmetic_mean":
        raise NotImplementedError("only arithmetic_mean is emulated")
    ids = _ids_in_order(lists)
    scores = [dict(run) for run in normalized]
    total = sum(weights)
    pairs = list(zip(weights, scores, strict=True))
    fused = [(doc, sum(w * score.get(doc, 0.0) for w, score in pairs) / total) for doc in ids]
    return _sorted(fused)


def _reciprocal_ranks(run: Ranked, constant: int) -> Ranked:
    return [(doc, 1.0 / (constant + rank)) for rank, (doc, _) in enumerate(run, start=1)]


def _os_min_max(run: Ranked) -> Ranked:
    if not run:
        return []
    low, high = min(s for _, s in run), max(s for _, s in run)
    if high == low:
        return [(doc, 1.0) for doc, _ in run]
    return [(doc, ((s - low) / (high - low)) or 0.001) for doc, s in run]


def _os_l2(run: Ranked) -> Ranked:
    norm = math.sqrt(sum(s * s for _, s in run))
    return [(doc, s / norm if norm else 0.001) for doc, s in run]


def _es_normalize(run: Ranked, normalizer: str) -> Ranked:
    if normalizer == "minmax":
        if not run:
            return []
        low, high = min(s for _, s in run), max(s for _, s in run)
        return [(doc, 1.0 if high == low else (s - low) / (high - low)) for doc, s in run]
    if normalizer == "l2_norm":
        norm = math.sqrt(sum(s * s for _, s in run))
        return [(doc, s / norm if norm else 0.0) for doc, s in run]
    return list(run)


def _weighted_sum(lists: Sequence[Ranked], weights: Sequence[float]) -> Ranked:
    totals: dict[str, float] = {}
    for weight, run in zip(weights, lists, strict=True):
        for doc, score in run:
            totals[doc] = totals.get(doc, 0.0) + weight * score
    return _sorted(list(totals.items()))


def _ids_in_order(lists: Sequence[Ranked]) -> list[str]:
    seen: dict[str, None] = {}
    for run in lists:
        seen.update(dict.fromkeys(doc for doc, _ in run))
    return list(seen)


def _sorted(pairs: Ranked) -> Ranked:
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


def _result(fused: Ranked, sources: Mapping[str, Mapping[str, Any]]) -> SearchResult:
    hits = [Hit(id=doc, score=score, source=sources.get(doc, {})) for doc, score in fused]
    raw = {"hits": {"hits": [{"_id": doc, "_score": score} for doc, score in fused]}}
    return SearchResult(hits=hits, total=len(hits), took_ms=0, raw=raw)


def same_ranking_ties_aside(expected: Sequence[tuple[str, float]], actual: Sequence[str], *, places: int = 6) -> bool:
    """True when ``actual`` orders ids as the (at least as long) ``expected`` does, ties aside.

    Ids of equal expected score may come in any order, and where ``actual`` ends inside such a group it
    may hold any of the group's ids.
    """
    if len(expected) < len(actual):
        return False
    position = 0
    while position < len(actual):
        score = round(expected[position][1], places)
        end = position
        while end < len(expected) and round(expected[end][1], places) == score:
            end += 1
        group = {doc for doc, _ in expected[position:end]}
        if not set(actual[position:end]) <= group or len(set(actual[position:end])) != len(actual[position:end]):
            return False
        position = end
    return True
