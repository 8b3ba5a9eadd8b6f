"""Fit the ``qpp`` fusion model on a BEIR split and write it as JSON (how esbridge's default model was made).

    .venv/bin/python benchmarks/fit_qpp.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --split train --out esbridge/query/fusion/qpp_scifact.json

Each query's BM25 and kNN chunk lists are fetched once with the pipeline's own request bodies at the
default depth (20 chunks for 10 results); min-max linear fusion at each candidate kNN share is scored
per document with ranx (the per-query gains), ``predictors`` reads the lists, and
``esbridge.evaluation.qpp_fit`` fits the ridge model. Prints the cross-validated nDCG@10 of choosing by
the model beside the best fixed share's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fusion_alternatives import DEFAULT_DEPTH, fused, head, per_document, retrieve
from index_study import study_parser, study_settings

from esbridge.embeddings.factory import uncached_model
from esbridge.evaluation import metrics, qpp_fit
from esbridge.evaluation.dataset import judged_queries
from esbridge.query.api import query_embedding
from esbridge.query.fusion.qpp import predictors

SHARES = (0.4, 0.5, 0.6)


def main() -> None:
    parser = study_parser(__doc__, split="train")
    parser.add_argument("--out", type=Path, help="where to write the model (JSON); printed if not given")
    parser.add_argument("--ridge", type=float, default=qpp_fit.DEFAULT_RIDGE)
    args = parser.parse_args()
    settings = study_settings(args)
    judged = judged_queries(args.dataset, args.split)
    with uncached_model(query_embedding(settings)) as embedder:
        embedding_model = embedder.name
        lists = asyncio.run(retrieve(settings, embedder, judged.queries, DEFAULT_DEPTH))
    qrels = metrics.qrels(judged.qrels)
    per_share = []
    for share in SHARES:
        ranking = {
            query: per_document(
                fused(head(found.bm25, DEFAULT_DEPTH), head(found.knn, DEFAULT_DEPTH), share), found.doc_of
            )
            for query, found in lists.items()
        }
        per_share.append(metrics.per_query(qrels, ranking, "ndcg@10"))
    rows, gains = [], []
    for query, found in lists.items():
        read = predictors(found.bm25, found.knn)
        if read is not None:
            rows.append(list(read))
            gains.append([scores.get(query, 0.0) for scores in per_share])
    source = (
        f"fitted by benchmarks/fit_qpp.py on {args.dataset.name} {args.split} ({len(rows)} queries), "
        f"index {args.index}, ridge {args.ridge:g}"
    )
    model = qpp_fit.fit(rows, gains, SHARES, ridge=args.ridge, source=source, embedding_model=embedding_model)
    fixed = {share: sum(row[j] for row in gains) / len(gains) for j, share in enumerate(SHARES)}
    validated = qpp_fit.cross_validated(rows, gains, SHARES, ridge=args.ridge)
    print(f"{args.split}: {len(rows)} queries with predictors of {len(lists)}")
    print("fixed kNN share: " + ", ".join(f"{share:g} {value:.4f}" for share, value in fixed.items()))
    print(f"qpp, 5-fold cross-validated (5 repeats): {validated:.4f}")
    text = json.dumps(model.as_params(), indent=2) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        print(f"written to {args.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()
