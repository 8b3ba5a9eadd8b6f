"""BM25 alone at several title boosts, per document (best chunk), on a BEIR split: how the boost was chosen.

    .venv/bin/python benchmarks/bm25_title_boost.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --split train --boosts 3 2 1.5 1 0.5

Prints nDCG@10 and Recall@100 (ranx) for each title boost, the other field boosts as in
``esbridge.query.bodies.DEFAULT_TEXT_BOOSTS``. Each query asks for 300 chunks.
"""

from __future__ import annotations

import argparse
import asyncio

from index_study import study_parser, study_settings

from esbridge.config.fields import DEFAULT_FIELD_MAP
from esbridge.engines import connect_async
from esbridge.evaluation import metrics
from esbridge.evaluation.dataset import judged_queries
from esbridge.query import bodies
from esbridge.query.models import Filters


async def run(args: argparse.Namespace) -> None:
    settings = study_settings(args)
    judged = judged_queries(args.dataset, args.split)
    engine = connect_async(settings)
    rankings: dict[float, dict[str, dict[str, float]]] = {boost: {} for boost in args.boosts}
    try:
        for query, text in judged.queries.items():
            for boost in args.boosts:
                fields = DEFAULT_FIELD_MAP.model_copy(update={"text": {**DEFAULT_FIELD_MAP.text, "title": boost}})
                body = bodies.bm25_body(engine.dialect, text, size=300, filters=Filters(), fields=fields)
                found = await engine.search(settings.index, body)
                ranking: dict[str, float] = {}
                for hit in found.hits:
                    ranking.setdefault(str(hit.source.get("doc_id")), hit.score)
                rankings[boost][query] = ranking
    finally:
        await engine.close()
    judgements = metrics.qrels(judged.qrels)
    print(f"{'title boost':>11} {'nDCG@10':>8} {'Recall@100':>10}")
    for boost, per_query in rankings.items():
        scores = metrics.mean_scores(judgements, per_query, ["ndcg@10", "recall@100"])
        print(f"{boost:>11g} {scores['ndcg@10']:>8.4f} {scores['recall@100']:>10.4f}")


def main() -> None:
    parser = study_parser(__doc__, split="train")
    parser.add_argument("--boosts", type=float, nargs="+", default=[3.0, 2.0, 1.5, 1.0, 0.5])
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
