"""Client-only alternatives to the default fusion on a BEIR split: could esbridge beat native hybrid that way?

    .venv/bin/python benchmarks/fusion_alternatives.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --split train

OpenSearch's native hybrid computes the default's fusion (min-max, equal weights: docs/native-hybrid.md),
so only a ranking it cannot compute can beat it. Each query's BM25 and kNN chunk lists are fetched once,
``--depth`` chunks each, with the pipeline's own request bodies; the variants re-fuse them and are
scored per document (its best chunk, as ``esbridge eval`` does) with ranx:

- ``default``: min-max linear, equal weights, over the top 20 chunks of each list (``top_k`` for 10 results);
- ``depth D``: the same over the top D chunks of each list;
- ``tmm w``: theoretical min-max (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid
  Retrieval", ACM TOIS 42(1), 2023): each score divided by its list's maximum, the theoretical minimum
  being 0 for BM25 and for the engines' kNN score (1 + cos) / 2; kNN weight w, BM25 1 - w;
- ``chunks l``: a document scores its best chunk plus l times the sum of its other chunks;
- ``prf m a``: Rocchio feedback on the query vector (Rocchio 1971; for dense retrieval, Li et al.,
  "Pseudo Relevance Feedback with Deep Language Models and Dense Retrievers", TOIS 2023): a x query +
  (1 - a) x mean of the m best fused chunks' stored vectors, normalised; a second kNN request; fused again.

Prints nDCG@10 per variant and the p-value of a paired two-sided t-test against ``default``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from index_study import study_parser, study_settings

from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder, embed_queries
from esbridge.embeddings.factory import uncached_model
from esbridge.engines import connect_async, resolve_kind
from esbridge.engines.base import AsyncEngine
from esbridge.evaluation import metrics
from esbridge.evaluation.dataset import judged_queries
from esbridge.query import retrievers
from esbridge.query.api import query_embedding
from esbridge.query.models import Filters
from esbridge.query.normalization import min_max
from esbridge.query.retrievers import RetrievalContext

DEFAULT_DEPTH = 20
Chunks = dict[str, float]


@dataclass
class Lists:
    """One query's retrieval: chunk -> score per retriever, chunk -> document, and its query vector."""

    bm25: Chunks
    knn: Chunks
    doc_of: dict[str, str]
    vector: list[float]


def head(run: Chunks, depth: int) -> Chunks:
    return dict(list(run.items())[:depth])


def over_max(run: Chunks) -> Chunks:
    top = max(run.values(), default=0.0)
    return {chunk: score / top for chunk, score in run.items()} if top > 0 else dict.fromkeys(run, 0.0)


def fused(bm25: Chunks, knn: Chunks, knn_weight: float = 0.5, *, theoretical: bool = False) -> Chunks:
    normalize = over_max if theoretical else min_max
    lexical, semantic = normalize(bm25), normalize(knn)
    scores = {
        chunk: (1 - knn_weight) * lexical.get(chunk, 0.0) + knn_weight * semantic.get(chunk, 0.0)
        for chunk in lexical.keys() | semantic.keys()
    }
    return dict(sorted(scores.items(), key=lambda pair: (-pair[1], pair[0])))


def per_document(chunks: Chunks, doc_of: Mapping[str, str], others: float = 0.0, top_n: int = 10) -> Chunks:
    """Documents by their best chunk's score, plus ``others`` times the sum of their other chunks'."""
    parts: dict[str, list[float]] = {}
    for chunk, score in chunks.items():
        parts.setdefault(doc_of[chunk], []).append(score)
    scores = {doc: max(found) + others * (sum(found) - max(found)) for doc, found in parts.items()}
    return dict(sorted(scores.items(), key=lambda pair: -pair[1])[:top_n])


async def retrieve(settings: Settings, embedder: Embedder, texts: Mapping[str, str], depth: int) -> dict[str, Lists]:
    engine = connect_async(settings, kind=resolve_kind(settings))
    candidates = max(settings.mapping.hnsw_ef_search, depth)
    vectors = embed_queries(embedder, list(texts.values()))
    found: dict[str, Lists] = {}
    try:
        for (query, text), vector in zip(texts.items(), vectors, strict=True):
            context = RetrievalContext(engine.dialect, text, depth, Filters(), candidates, ("doc_id",))
            lexical = await engine.search(settings.index, retrievers.bm25.body(context, None))
            semantic = await engine.search(settings.index, retrievers.knn.body(context, vector))
            hits = [*lexical.hits, *semantic.hits]
            found[query] = Lists(
                {hit.id: hit.score for hit in lexical.hits},
                {hit.id: hit.score for hit in semantic.hits},
                {hit.id: str(hit.source.get("doc_id", hit.id)) for hit in hits},
                vector,
            )
    finally:
        await engine.close()
    return found


async def feedback(
    settings: Settings, lists: Mapping[str, Lists], texts: Mapping[str, str], chunks: int, keep: float
) -> dict[str, Chunks]:
    """Per query, the documents of the default fusion after one round of Rocchio feedback on the kNN side."""
    engine: AsyncEngine = connect_async(settings, kind=resolve_kind(settings))
    ranked: dict[str, Chunks] = {}
    try:
        for query, found in lists.items():
            bm25 = head(found.bm25, DEFAULT_DEPTH)
            best = list(fused(bm25, head(found.knn, DEFAULT_DEPTH)))[:chunks]
            stored = await engine.search(
                settings.index, {"size": len(best), "_source": ["vector"], "query": {"ids": {"values": best}}}
            )
            rows = [hit.source["vector"] for hit in stored.hits if hit.source.get("vector")]
            if not rows:
                ranked[query] = per_document(fused(bm25, head(found.knn, DEFAULT_DEPTH)), found.doc_of)
                continue
            centroid = [sum(column) / len(rows) for column in zip(*rows, strict=True)]
            moved = [keep * q + (1 - keep) * c for q, c in zip(found.vector, centroid, strict=True)]
            norm = math.sqrt(sum(value * value for value in moved)) or 1.0
            context = RetrievalContext(
                engine.dialect, texts[query], DEFAULT_DEPTH, Filters(), settings.mapping.hnsw_ef_search, ("doc_id",)
            )
            answer = await engine.search(settings.index, retrievers.knn.body(context, [v / norm for v in moved]))
            doc_of = {**found.doc_of, **{hit.id: str(hit.source.get("doc_id", hit.id)) for hit in answer.hits}}
            ranked[query] = per_document(fused(bm25, {hit.id: hit.score for hit in answer.hits}), doc_of)
    finally:
        await engine.close()
    return ranked


def variants(lists: Mapping[str, Lists], depths: Sequence[int]) -> dict[str, dict[str, Chunks]]:
    def each(**how: float) -> dict[str, Chunks]:
        depth = int(how.get("depth", DEFAULT_DEPTH))
        return {
            query: per_document(
                fused(
                    head(found.bm25, depth),
                    head(found.knn, depth),
                    how.get("knn_weight", 0.5),
                    theoretical=bool(how.get("tmm", 0)),
                ),
                found.doc_of,
                how.get("others", 0.0),
            )
            for query, found in lists.items()
        }

    table = {"default": each()}
    table.update({f"depth {depth}": each(depth=depth) for depth in depths if depth != DEFAULT_DEPTH})
    table.update({f"tmm {w:g}": each(tmm=1, knn_weight=w) for w in (0.4, 0.5, 0.6, 0.7, 0.8)})
    table.update({f"chunks {share:g}": each(others=share) for share in (0.1, 0.2, 0.5)})
    return table


def main() -> None:
    parser = study_parser(__doc__, split="train")
    parser.add_argument("--depths", type=int, nargs="*", default=[50, 100, 200])
    parser.add_argument("--no-prf", action="store_true", help="Skip the feedback variants (a request per query each).")
    args = parser.parse_args()
    settings = study_settings(args)
    judged = judged_queries(args.dataset, args.split)
    depth = max([DEFAULT_DEPTH, *args.depths])
    with uncached_model(query_embedding(settings)) as embedder:
        lists = asyncio.run(retrieve(settings, embedder, judged.queries, depth))
    table = variants(lists, args.depths)
    if not args.no_prf:
        for chunks, keep in ((3, 0.5), (3, 0.7), (3, 0.85), (5, 0.7)):
            table[f"prf {chunks} {keep:g}"] = asyncio.run(feedback(settings, lists, judged.queries, chunks, keep))
    scored = metrics.compare(metrics.qrels(judged.qrels), table, ["ndcg@10"], "default")
    print(f"{args.split}: {len(lists)} queries on index {args.index}")
    print(f"{'variant':<14} {'nDCG@10':>8} {'p vs default':>13}")
    for name, result in scored.items():
        p_value = result.p_values.get("ndcg@10")
        shown = "" if p_value is None else f"{p_value:.3f}"
        print(f"{name:<14} {result.scores['ndcg@10']:>8.4f} {shown:>13}")


if __name__ == "__main__":
    main()
