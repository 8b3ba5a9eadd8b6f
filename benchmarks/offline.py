"""Studies that re-rank fetched retrieval lists without the engine: each query's BM25 and kNN lists are
fetched once with the pipeline's own request bodies, then fusion, graph expansion and shaping (the
product's own pure functions) run in-process for every setting studied.

A list file (``--lists``) keeps the fetched lists, so a second study of the same index is free.
``rank`` reproduces ``HybridSearcher`` for a client-fused search without recency or re-ranking; each
study checks that its ``default`` figure equals ``esbridge eval``'s.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder, embed_queries
from esbridge.embeddings.factory import open_embedder
from esbridge.engines import connect, connect_async, resolve_kind
from esbridge.evaluation.dataset import JudgedQueries, judged_queries
from esbridge.query import retrievers
from esbridge.query.fusion import get_fusion
from esbridge.query.graph import GraphOptions, expand, with_neighbors
from esbridge.query.link_graph import LINK_FIELDS, build_graph, link_map
from esbridge.query.models import Filters
from esbridge.query.retrievers import RetrievalContext
from esbridge.query.shaping import ShapeOptions, shape

Chunks = dict[str, float]


@dataclass
class Lists:
    """One query's retrieval at one depth: chunk -> score per retriever, and chunk -> document."""

    runs: dict[str, Chunks]
    doc_of: dict[str, str]


async def _retrieve(settings: Settings, embedder: Embedder, texts: Mapping[str, str], depth: int) -> dict[str, Lists]:
    engine = connect_async(settings, kind=resolve_kind(settings))
    candidates = max(settings.mapping.hnsw_ef_search, 2 * depth)
    vectors = embed_queries(embedder, list(texts.values()))
    found: dict[str, Lists] = {}
    try:
        for (query, text), vector in zip(texts.items(), vectors, strict=True):
            context = RetrievalContext(engine.dialect, text, depth, Filters(), candidates, ("doc_id",))
            lexical = await engine.search(settings.index, retrievers.bm25.body(context, None))
            semantic = await engine.search(settings.index, retrievers.knn.body(context, vector))
            found[query] = Lists(
                {
                    "bm25": {hit.id: hit.score for hit in lexical.hits},
                    "knn": {hit.id: hit.score for hit in semantic.hits},
                },
                {hit.id: str(hit.source.get("doc_id", hit.id)) for hit in [*lexical.hits, *semantic.hits]},
            )
    finally:
        await engine.close()
    return found


def lists(
    settings: Settings, embedder: Embedder, texts: Mapping[str, str], depths: tuple[int, ...], cache: Path | None
) -> dict[int, dict[str, Lists]]:
    """``{depth: {query: Lists}}``, read from ``cache`` when it holds them, else fetched (and written there)."""
    if cache is not None and cache.exists():
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if stored["index"] == settings.index and sorted(stored["lists"]) == sorted(map(str, depths)):
            return {
                int(depth): {query: Lists(**value) for query, value in by_query.items()}
                for depth, by_query in stored["lists"].items()
            }
    found = {depth: asyncio.run(_retrieve(settings, embedder, texts, depth)) for depth in depths}
    if cache is not None:
        payload = {
            depth: {query: asdict(value) for query, value in by_query.items()} for depth, by_query in found.items()
        }
        cache.write_text(json.dumps({"index": settings.index, "lists": payload}), encoding="utf-8")
    return found


def link_graph(settings: Settings) -> nx.DiGraph:
    """The whole index's link graph (what graph expansion fetches piecemeal), built once."""
    engine = connect(settings)
    try:
        hits = engine.scan(settings.index, {"match_all": {}}, list(LINK_FIELDS), sort_field="chunk_id")
        return build_graph(link_map(hit.source for hit in hits))
    finally:
        engine.close()


TOP, DEEP = 10, 100
"""The two searches ``esbridge eval`` scores: nDCG@10 from a 10-result one, Recall@100 from a 100-result one."""


@dataclass(frozen=True)
class LinkedStudy:
    """What the graph studies start from: a collection's judged queries, their lists at both depths, its links."""

    settings: Settings
    judged: JudgedQueries
    depths: tuple[int, int]
    found: dict[int, dict[str, Lists]]
    graph: nx.DiGraph


def linked_study(dataset: Path, url: str | None, index: str | None, cache: Path | None) -> LinkedStudy:
    """The lists of ``dataset``'s test queries from its index (``eval-<folder>`` by default) and the index's links."""
    settings = load_settings(url=url, index=index or f"eval-{dataset.resolve().name.lower()}")
    pipeline = settings.pipeline
    judged = judged_queries(dataset, "test")
    depths = (pipeline.top_k(TOP), max(pipeline.top_k_min, int(max(pipeline.top_k_multiplier, 3.0) * DEEP)))
    with open_embedder(settings.embedding) as embedder:
        found = lists(settings, embedder, judged.queries, depths, cache)
    return LinkedStudy(settings, judged, depths, found, link_graph(settings))


def fuse(pipeline: PipelineSettings, found: Lists) -> Chunks:
    """The pipeline's fusion of one query's lists (fusion methods that read the query text are not supported)."""
    if pipeline.fusion == "adaptive":
        raise ValueError("adaptive fusion reads the query text; study it with esbridge eval")
    runs = {name: found.runs[name] for name in pipeline.retrievers}
    weights = {name: weight for name, weight in pipeline.weights.items() if name in runs}
    result = get_fusion(pipeline.fusion)(runs, weights=weights, **dict(pipeline.fusion_params))
    return dict(result.scores)


def rank(pipeline: PipelineSettings, found: Lists, top_n: int, graph: GraphOptions | None, links: nx.DiGraph) -> Chunks:
    """Documents, best first, as a client-fused search of ``top_n`` collapsed results ranks them."""
    scores = fuse(pipeline, found)
    doc_of = dict(found.doc_of)
    if graph is not None and scores:
        expansion = expand(scores, doc_of, links, graph)
        scores = with_neighbors(scores, expansion)
        doc_of.update(expansion.doc_of)
    shaping = pipeline.shaping
    options = ShapeOptions(
        top_n=top_n, collapse=True, floor=shaping.floor, cap_types=shaping.cap_types, type_share=shaping.type_share
    )
    final = shape(scores, options, doc_of=doc_of, entity_type_of={})
    ranked = list(dict.fromkeys(doc_of[item] for item in final))
    return {doc: float(len(ranked) - position) for position, doc in enumerate(ranked)}


def graph_options(settings: Mapping[str, Any]) -> GraphOptions:
    return GraphOptions(**{key: value for key, value in settings.items() if key != "enabled"})
