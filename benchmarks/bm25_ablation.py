"""What in esbridge's BM25 costs against plain BM25 on each collection: k1/b, the field boosts, the fields.

    .venv/bin/python benchmarks/bm25_ablation.py ../shared/data/beir/scifact@train ../shared/data/classic/cisi \
        ../shared/data/classic/med --url http://127.0.0.1:9200

On each collection's ingested ``eval-<folder>`` index, BM25 alone (esbridge's request body, the best chunk
per document, 10 documents) is run at each (k1, b) point with each field variant; ``plain`` is
``benchmarks/plain_bm25.py``'s figure (one document per record, Lucene defaults, BEIR's query). The
similarity is switched by closing the index, as ``bm25_similarity.py`` does, and restored at the end.
"""

from __future__ import annotations

import argparse

from bm25_similarity import engine_client, restored_similarity, set_similarity
from plain_bm25 import plain_index, plain_run, print_against_plain

from esbridge.config import load_settings
from esbridge.config.fields import DEFAULT_FIELD_MAP
from esbridge.engines import connect
from esbridge.evaluation import metrics
from esbridge.evaluation.collections import parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.query import bodies
from esbridge.query.models import Filters

POINTS = ((0.9, 0.4), (1.2, 0.75), (1.2, 0.4), (0.9, 0.75))
TEXT = dict(bodies.DEFAULT_TEXT_BOOSTS)
VARIANTS: dict[str, tuple[dict[str, float], dict[str, float]]] = {
    "esbridge": (TEXT, dict(bodies.DEFAULT_EXACT_BOOSTS)),
    "title 1": ({**TEXT, "title": 1.0}, dict(bodies.DEFAULT_EXACT_BOOSTS)),
    "no metadata_text": ({k: v for k, v in TEXT.items() if k != "metadata_text"}, dict(bodies.DEFAULT_EXACT_BOOSTS)),
    "title+body only": ({"title": 1.0, "body": 1.0}, {}),
}


def documents(hits: list[tuple[str, str, float]], top: int = 10) -> dict[str, float]:
    ranked = list(dict.fromkeys(doc for doc, _, _ in hits))[:top]
    return {doc: float(len(ranked) - position) for position, doc in enumerate(ranked)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url")
    args = parser.parse_args()
    table: dict[str, dict[str, float]] = {}
    labels = []
    for argument in args.datasets:
        collection = parse_collection(argument, "test")
        labels.append(collection.label)
        name = collection.folder.resolve().name.lower()
        settings = load_settings(url=args.url, index=f"eval-{name}")
        judged = judged_queries(collection.folder, collection.split)
        qrels = metrics.qrels(judged.qrels)
        engine = connect(settings)
        client = engine_client(settings)
        try:
            plain_index(engine, collection.folder, f"plain-{name}")
            plain = plain_run(engine, f"plain-{name}", judged.queries)
            table.setdefault("plain", {})[collection.label] = metrics.mean_scores(qrels, plain, ["ndcg@10"])["ndcg@10"]
            (target,) = engine.alias_targets(settings.index)
            top_k = settings.pipeline.top_k(10)
            with restored_similarity(client, target):
                for k1, b in POINTS:
                    set_similarity(client, target, k1, b)
                    for variant, (text_boosts, exact_boosts) in VARIANTS.items():
                        run = {}
                        for query, text in judged.queries.items():
                            body = bodies.bm25_body(
                                engine.dialect,
                                text,
                                size=top_k,
                                filters=Filters(),
                                fields=DEFAULT_FIELD_MAP.model_copy(
                                    update={"text": dict(text_boosts), "exact": dict(exact_boosts)}
                                ),
                                source_fields=("doc_id",),
                            )
                            found = engine.search(settings.index, body)
                            run[query] = documents([(str(h.source["doc_id"]), h.id, h.score) for h in found.hits])
                        key = f"k1={k1:g} b={b:g} {variant}"
                        table.setdefault(key, {})[collection.label] = metrics.mean_scores(qrels, run, ["ndcg@10"])[
                            "ndcg@10"
                        ]
        finally:
            client.close()
            engine.close()
    print_against_plain(table, labels, 36)


if __name__ == "__main__":
    main()
