"""Quantized vectors on SciFact, in one run: kNN recall@10 against exact search, nDCG@10 of knn and the
default, and what the index keeps on disk per encoding, on each engine given.

    .venv/bin/python benchmarks/vector_encodings.py --opensearch http://127.0.0.1:9200 \\
        --elasticsearch http://127.0.0.1:9201

Each encoding the engine's version offers gets its own index (``esbridge eval`` ingests SciFact into
``bench-vec-<engine>-<encoding>`` with ``[mapping] vector_encoding``, embeddings from the cache), force-merged
to one segment so the encodings compare on the same graph shape. Exact search is client-side: cosine over
every chunk vector read back from the float index. Sizes come from ``_stats`` per Lucene file type: ``vec``
(the float vectors, kept by every encoding for rescoring), ``vex`` (the HNSW graph), ``veq``/``veb`` (the
quantized vectors). What a search needs in memory (page cache, off-heap) is the graph and the vectors it
compares: ``vex`` + ``vec`` for float, ``vex`` + ``veq``/``veb`` when quantized. The indices are deleted after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from esbridge.config import load_settings
from esbridge.embeddings.base import embed_queries
from esbridge.engines import connect
from esbridge.engines.vector_options import encodings
from esbridge.evaluation.dataset import judged_queries
from esbridge.mappings.schema import VECTOR_FIELD
from esbridge.query import bodies
from esbridge.query.api import open_query_embedder
from esbridge.query.models import Filters

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"


def call(url: str, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"{url}{path}", method=method)  # noqa: S310 - the engine URL given
    with urllib.request.urlopen(request, timeout=600) as answer:  # noqa: S310
        return json.load(answer)


def file_sizes(url: str, index: str) -> dict[str, int]:
    stats = call(url, f"/{index}/_stats/segments,store?include_segment_file_sizes=true")["_all"]["primaries"]
    sizes = {kind: int(entry["size_in_bytes"]) for kind, entry in stats["segments"]["file_sizes"].items()}
    return {"store": int(stats["store"]["size_in_bytes"]), **sizes}


def run_engine(kind: str, url: str, queries: dict[str, str]) -> list[dict[str, Any]]:
    settings = load_settings(url=url, engine=kind, timeout_s=120)
    engine = connect(settings)
    embedder, _ = open_query_embedder(settings)
    assert embedder is not None
    query_vectors = np.asarray(embed_queries(embedder, list(queries.values())), dtype=np.float32)
    rows: list[dict[str, Any]] = []
    exact: list[set[str]] = []
    try:
        for encoding in encodings(engine.dialect, engine.probe().version):
            alias = f"bench-vec-{kind}-{encoding}"
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "ESBRIDGE_URL": url, "ESBRIDGE_ENGINE": kind,
                   "ESBRIDGE_MAPPING__VECTOR_ENCODING": encoding}  # fmt: skip
            done = subprocess.run(  # noqa: S603 - our own CLI
                [str(REPO / ".venv/bin/esbridge"), "eval", str(SCIFACT), "--index", alias,
                 "--methods", "knn,default", "--baseline", "knn", "--json"],
                env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            ndcg = {row["name"]: row["ndcg@10"] for row in json.loads(done.stdout)["results"]}
            index = engine.alias_targets(alias)[0]
            call(url, f"/{index}/_forcemerge?max_num_segments=1", method="POST")
            engine.refresh(index)
            if not exact:  # the float index comes first: exact top 10 by cosine over all chunk vectors
                ids, vectors = [], []
                for hit in engine.scan(index, {"match_all": {}}, [VECTOR_FIELD], sort_field="chunk_id"):
                    ids.append(hit.id)
                    vectors.append(hit.source[VECTOR_FIELD])
                matrix = np.asarray(vectors, dtype=np.float32)
                matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
                scores = query_vectors @ matrix.T / np.linalg.norm(query_vectors, axis=1, keepdims=True)
                exact = [{ids[i] for i in np.argsort(-row)[:10]} for row in scores]
            found = []
            for vector, truth in zip(query_vectors, exact, strict=True):
                body = bodies.knn_body(engine.dialect, vector.tolist(), k=10, filters=Filters(), num_candidates=100)
                body["_source"] = False
                hits = engine.search(index, body).hits[:10]
                found.append(len({hit.id for hit in hits} & truth) / 10)
            sizes = file_sizes(url, index)
            in_memory = sizes.get("vex", 0) + (
                sizes.get("vec", 0) if encoding == "float" else sizes.get("veq", 0) + sizes.get("veb", 0)
            )
            rows.append({"engine": kind, "encoding": encoding, "recall@10": round(float(np.mean(found)), 4),
                         "ndcg@10": ndcg, "bytes": sizes, "search_memory_bytes": in_memory})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    finally:
        for encoding in ("float", "int8", "int4", "bbq"):
            for info in engine.list_indices(f"bench-vec-{kind}-{encoding}*"):
                engine.delete_index(info.name, missing_ok=True)
        engine.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opensearch")
    parser.add_argument("--elasticsearch")
    options = parser.parse_args()
    queries = judged_queries(SCIFACT, "test").queries
    rows: list[dict[str, Any]] = []
    for kind in ("opensearch", "elasticsearch"):
        url = getattr(options, kind)
        if url:
            rows.extend(run_engine(kind, url, dict(queries)))
    print("| engine | encoding | kNN recall@10 vs exact | knn nDCG@10 | default nDCG@10 | store MB | search MB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['engine']} | {row['encoding']} | {row['recall@10']:.3f} | {row['ndcg@10']['knn']:.4f} | "
            f"{row['ndcg@10']['default']:.4f} | {row['bytes']['store'] / 2**20:.1f} | "
            f"{row['search_memory_bytes'] / 2**20:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
