"""Running judged queries through several configurations of the real search pipeline.

Every configuration is answered by ``HybridSearcher``, so what is measured is what users get. The
configurations of one query share its retrieval: a memoising engine answers a request body it has
seen for this query from memory, and the query is embedded once. So a grid of fusion settings costs
one round of retrieval per query and depth, plus fusion (a pure function) per configuration.

Two rankings are taken per configuration and query, both collapsed to the best chunk per document
(judgements are per document): ``top`` (``top_n`` documents with the pipeline's own depth, as a search
of that size gets it; nDCG@10 and MRR@10 come from it) and ``deep`` (``deep_n`` documents, each
retriever asked for ``deep_multiplier`` x ``deep_n`` chunks; Recall@100 comes from it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.config.pipeline import CacheSettings
from esbridge.embeddings.base import Embedder, model_profile
from esbridge.embeddings.identity import ModelIdentity, identity_of
from esbridge.embeddings.profiles import ModelProfile
from esbridge.engines.base import AsyncEngine, Dialect, SearchResult
from esbridge.engines.capabilities import Capabilities
from esbridge.errors import EsbridgeError
from esbridge.evaluation.methods import Configuration
from esbridge.evaluation.reranking import Rerankers
from esbridge.query.factory import build_searcher
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.types import FusionDecision

# {query id: {doc id: score}}, scores strictly decreasing in rank order.
DocRun = dict[str, dict[str, float]]


class MemoEngine:
    """An ``AsyncEngine`` that answers a request body it has already seen from memory, until ``forget``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._answers: dict[str, SearchResult] = {}
        self.requests = 0

    @property
    def dialect(self) -> Dialect:
        return self._engine.dialect

    @property
    def url(self) -> str:
        return self._engine.url

    def forget(self) -> None:
        self._answers.clear()

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        key = _key(index, body)
        if (known := self._answers.get(key)) is None:
            self.requests += 1
            known = self._answers[key] = await self._engine.search(index, body)
        return known

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        keys = [_key(index, body) for body in bodies]
        missing = {key: body for key, body in zip(keys, bodies, strict=True) if key not in self._answers}
        failed: dict[str, Exception] = {}
        if missing:
            self.requests += 1
            answers = await self._engine.msearch(index, list(missing.values()))
            for key, answer in zip(missing, answers, strict=True):
                if isinstance(answer, Exception):
                    failed[key] = answer  # not kept: a failure is not an answer
                else:
                    self._answers[key] = answer
        return [failed[key] if key in failed else self._answers[key] for key in keys]

    async def close(self) -> None:
        await self._engine.close()


def _key(index: str, body: Mapping[str, Any]) -> str:
    return index + "\n" + json.dumps(body, sort_keys=True, default=str)


class MemoEmbedder:
    """An ``Embedder`` that embeds each distinct text once per run."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._vectors: dict[str, list[float]] = {}

    @property
    def name(self) -> str:
        return self._embedder.name

    @property
    def identity(self) -> str:
        return self._embedder.identity

    @property
    def model_identity(self) -> ModelIdentity:
        return identity_of(self._embedder)

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    @property
    def max_tokens(self) -> int:
        return self._embedder.max_tokens

    def count_tokens(self, text: str) -> int:
        return self._embedder.count_tokens(text)

    @property
    def prompts(self) -> ModelProfile:
        return model_profile(self._embedder)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if todo:
            self._vectors.update(zip(todo, self._embedder.embed(todo), strict=True))
        return [self._vectors[text] for text in texts]


@dataclass
class ConfigurationRuns:
    """What one configuration answered: the two rankings, and why it could not answer if it could not."""

    configuration: Configuration
    top: DocRun = field(default_factory=dict)
    deep: DocRun = field(default_factory=dict)
    unavailable: str | None = None
    warnings: dict[str, int] = field(default_factory=dict)
    """warning text -> how many queries had it (degraded answers are counted, not hidden)"""
    decisions: dict[str, FusionDecision] = field(default_factory=dict)
    """query id -> the fusion method's decision for the ``top`` ranking (adaptive and qpp fusion explain theirs)"""


@dataclass(frozen=True)
class Depth:
    top_n: int = 10
    deep_n: int = 100
    deep_multiplier: float = 3.0
    deep: bool = True
    """False: only the ``top`` ranking (tuning needs no Recall@100)."""


async def run_configurations(
    engine: AsyncEngine,
    index: str,
    embedder: Embedder | None,
    configurations: Sequence[Configuration],
    queries: Mapping[str, str],
    *,
    depth: Depth | None = None,
    num_candidates: int = 100,
    native_unavailable: str | None = None,
    capabilities: Capabilities | None = None,
    progress: Callable[[int], None] = lambda n: None,
    fields: FieldMap = DEFAULT_FIELD_MAP,
    rerankers: Rerankers | None = None,
) -> list[ConfigurationRuns]:
    """Each query through each configuration; retrieval shared by the configurations of a query.

    A native configuration answers only if the engine fuses itself (``search_mode`` ``native-hybrid``);
    otherwise it is reported unavailable with the reason, as it is when ``native_unavailable`` says so.
    ``rerankers`` may hold re-rankers loaded beforehand.
    """
    depth = depth or Depth()

    memo = MemoEngine(engine)
    model = MemoEmbedder(embedder) if embedder is not None else None
    rerankers = rerankers or Rerankers()
    outcomes = [ConfigurationRuns(configuration) for configuration in configurations]
    searchers: list[tuple[HybridSearcher, HybridSearcher | None]] = []
    for outcome in outcomes:
        configuration = outcome.configuration
        if configuration.native and native_unavailable:
            outcome.unavailable = f"not available on this engine: {native_unavailable}"
        pipeline = configuration.pipeline.model_copy(
            update={"cache": CacheSettings(embeddings=0, results=0), "top_n_max": max(depth.deep_n, depth.top_n)}
        )
        deep_pipeline = pipeline.model_copy(
            update={"top_k_multiplier": max(pipeline.top_k_multiplier, depth.deep_multiplier)}
        )
        reranker = rerankers.get(pipeline.rerank)
        top = build_searcher(
            memo,
            index,
            model,
            pipeline,
            num_candidates=num_candidates,
            probe=capabilities,
            fields=fields,
            reranker=reranker,
        )
        deep = (
            build_searcher(
                memo,
                index,
                model,
                deep_pipeline,
                num_candidates=num_candidates,
                probe=capabilities,
                fields=fields,
                reranker=reranker,
            )
            if depth.deep
            else None
        )
        searchers.append((top, deep))

    for query_id, text in queries.items():
        memo.forget()
        for outcome, (top, deep) in zip(outcomes, searchers, strict=True):
            if outcome.unavailable:
                continue
            response = await _answer(top, outcome, text, depth.top_n)
            if response is None:
                continue
            outcome.top[query_id] = doc_run(response)
            if (decision := response.details.fusion_decision) is not None:
                outcome.decisions[query_id] = decision
            deep_response = await _answer(deep, outcome, text, depth.deep_n, counted=False) if deep else None
            if deep_response is not None:
                outcome.deep[query_id] = doc_run(deep_response)
        progress(1)
    return outcomes


async def _answer(
    searcher: HybridSearcher, outcome: ConfigurationRuns, text: str, top_n: int, *, counted: bool = True
) -> SearchResponse | None:
    """The configuration's answer, or None when it turned out unavailable; its warnings are counted per
    query once (``counted`` only for the ``top`` answer)."""
    configuration = outcome.configuration
    request = SearchRequest(
        query=text,
        top_n=top_n,
        collapse=True,
        graph=configuration.graph,
        recency=configuration.recency,
        mode="native" if configuration.native else "client",
    )
    try:
        response = await searcher.search(request)
    except EsbridgeError as exc:
        if not configuration.native:
            raise
        outcome.unavailable = f"not available on this engine: {exc}"
        return None
    if configuration.native and response.search_mode != "native-hybrid":
        outcome.unavailable = (
            f"not available on this engine: it answered with client-side fusion (search_mode {response.search_mode})"
        )
        return None
    for warning in response.warnings if counted else ():
        outcome.warnings[warning] = outcome.warnings.get(warning, 0) + 1
    return response


def doc_run(response: SearchResponse) -> dict[str, float]:
    """Documents in the response's order, scored ``n, n-1, ..., 1`` so ties cannot reorder them."""
    ranked = list(dict.fromkeys(hit.doc_id for hit in response.results))
    return {doc_id: float(len(ranked) - rank) for rank, doc_id in enumerate(ranked)}
