"""esbridge attached to a SciFact index it did not create, beside esbridge's own index of the same chunks.

Copies the chunks of an esbridge index (``eval-scifact`` by default) into a new index made with plain
opensearch-py, under other field names and the engine's own defaults (Lucene BM25 k1 1.2, b 0.75, the
standard analyzer): ``paper_id`` (keyword), ``headline`` and ``abstract`` (text), ``emb`` (knn_vector, the
same vectors). It then runs ``esbridge index inspect --write`` and ``esbridge eval --reuse`` on both and
prints the figures side by side. The copy is deleted afterwards unless ``--keep``.

    .venv/bin/python benchmarks/attach_scifact.py --url http://127.0.0.1:9200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from opensearchpy import OpenSearch, helpers

ROOT = Path(__file__).resolve().parent.parent
ESBRIDGE = [sys.executable, "-m", "esbridge"]


def copy_index(client: OpenSearch, source: str, target: str) -> int:
    dimension = _dimension(client, source)
    client.indices.create(
        index=target,
        body={
            "settings": {"index": {"knn": True, "number_of_shards": 1, "number_of_replicas": 0}},
            "mappings": {
                "properties": {
                    "paper_id": {"type": "keyword"},
                    "headline": {"type": "text"},
                    "abstract": {"type": "text"},
                    "emb": {
                        "type": "knn_vector",
                        "dimension": dimension,
                        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
                    },
                }
            },
        },
    )

    def actions() -> Any:
        for hit in helpers.scan(client, index=source, _source=["doc_id", "title", "body", "vector"]):
            document = hit["_source"]
            yield {
                "_index": target,
                "_id": hit["_id"],
                "paper_id": document["doc_id"],
                "headline": document.get("title") or "",
                "abstract": document.get("body") or "",
                "emb": document["vector"],
            }

    written, _ = helpers.bulk(client, actions(), chunk_size=500, request_timeout=120)
    client.indices.refresh(index=target)
    return int(written)


def _dimension(client: OpenSearch, index: str) -> int:
    mapping = client.indices.get_mapping(index=index)
    properties = next(iter(mapping.values()))["mappings"]["properties"]
    return int(properties["vector"]["dimension"])


def evaluate(dataset: str, url: str, index: str, methods: str, config: Path | None) -> dict[str, Any]:
    command = [*ESBRIDGE, "eval", dataset, "--url", url, "--reuse", "--index", index, "--methods", methods, "--json"]
    if config is not None:
        command += ["--config", str(config)]
    answer = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)  # noqa: S603 - our own CLI
    return dict(json.loads(answer.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--source", default="eval-scifact")
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "beir" / "scifact"))
    parser.add_argument("--methods", default="bm25,knn,default")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    client = OpenSearch(hosts=[args.url], timeout=120)
    target = f"attach-bench-{uuid.uuid4().hex[:8]}"
    try:
        copied = copy_index(client, args.source, target)
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "esbridge.toml"
            subprocess.run(  # noqa: S603 - our own CLI
                [*ESBRIDGE, "index", "inspect", target, "--url", args.url, "--config", str(config), "--write"],
                check=True,
                capture_output=True,
                cwd=ROOT,
            )
            print(config.read_text(encoding="utf-8"))
            attached = evaluate(args.dataset, args.url, target, args.methods, config)
        own = evaluate(args.dataset, args.url, args.source, args.methods, None)
    finally:
        if not args.keep:
            client.indices.delete(index=target, ignore_unavailable=True)
    print(f"{copied} chunks copied from {args.source} into {target}; {own['queries']} queries")
    print(f"{'method':<10} {'own nDCG@10':>12} {'attached':>10} {'own R@100':>10} {'attached':>10}")
    rows = {row["name"]: row for row in attached["results"]}
    for row in own["results"]:
        other = rows[row["name"]]
        print(
            f"{row['name']:<10} {row['ndcg@10']:>12.4f} {other['ndcg@10']:>10.4f} "
            f"{row['recall@100']:>10.4f} {other['recall@100']:>10.4f}"
        )


if __name__ == "__main__":
    main()
