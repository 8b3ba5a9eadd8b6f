"""Chunk size across collections: BM25, kNN and the default hybrid at several ``max_tokens``.

    .venv/bin/python benchmarks/chunk_size.py ../shared/data/classic/med --sizes 200 256 320 \
        --url http://127.0.0.1:9200

Each size gets its own index, ``eval-<folder>-c<size>`` (ingested here; embeddings come from the cache
where the chunk text is unchanged), and the three configurations run through ``esbridge eval``'s
pipeline. ``max_tokens`` counts approximate word pieces (1.3 per word); the model reads at most its own
limit (256 for all-MiniLM-L6-v2), so a chunk above it is cut off for kNN, not for BM25.
"""

from __future__ import annotations

import argparse

from esbridge.config import load_settings
from esbridge.embeddings.factory import open_embedder
from esbridge.engines import connect
from esbridge.evaluation import report, session
from esbridge.evaluation.collections import parse_collection
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.methods import configurations
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import parameters_from


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--sizes", nargs="+", type=int, default=[200, 256, 320])
    parser.add_argument("--url")
    args = parser.parse_args()
    print(f"{'collection':<16}{'max_tokens':>11}{'chunks':>8}{'bm25':>9}{'knn':>9}{'default':>9}")
    for argument in args.datasets:
        collection = parse_collection(argument, "test")
        judged = judged_queries(collection.folder, collection.split)
        for size in args.sizes:
            name = f"eval-{collection.folder.resolve().name.lower()}-c{size}"
            settings = load_settings(url=args.url, index=name)
            with open_embedder(settings.embedding) as embedder:
                engine = connect(settings)
                try:
                    manager = IndexManager(engine, name, parameters_from(settings, embedder.dimension))
                    ingested = ingest(
                        collection.folder,
                        engine=engine,
                        manager=manager,
                        embedder=embedder,
                        options=IngestOptions(source_format="beir", max_tokens=size),
                    )
                    chunks = engine.count(name)
                finally:
                    engine.close()
                if ingested.failed:
                    raise SystemExit(f"{name}: {len(ingested.failed)} records failed, e.g. {ingested.failed[0]}")
                chosen = configurations("bm25,knn,default", settings.pipeline)
                outcome = session.run(settings, judged, chosen, embedder)
            rows = {row.name: row.scores["ndcg@10"] for row in report.score(judged.qrels, outcome.outcomes, None)}
            print(
                f"{collection.label:<16}{size:>11}{chunks:>8}"
                f"{rows['bm25']:>9.4f}{rows['knn']:>9.4f}{rows['default']:>9.4f}"
            )


if __name__ == "__main__":
    main()
