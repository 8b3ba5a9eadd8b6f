"""SciFact nDCG@10 and latency of bm25, knn and the default on 1 and 3 primaries (1 replica each), with
query_then_fetch and dfs_query_then_fetch, in one run against one cluster.

    scripts/engines up opensearch-cluster
    .venv/bin/python benchmarks/cluster_sharding.py --url http://127.0.0.1:9210

Each layout is ingested once (``esbridge eval`` into ``bench-shards-<n>``, embeddings from the cache), then
every search type is evaluated on the test queries (``esbridge eval --reuse``) and timed (``esbridge bench``,
the first ``--latency-queries`` test queries, concurrency 1). The indices are deleted afterwards unless
``--keep``. Prints one JSON object and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
SEARCH_TYPES = ("query_then_fetch", "dfs_query_then_fetch")


def esbridge(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(  # noqa: S603 - our own CLI
        [str(REPO / ".venv" / "bin" / "esbridge"), *args, "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(done.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:9210")
    parser.add_argument("--shards", default="1,3")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for shards in (int(n) for n in options.shards.split(",")):
        index = f"bench-shards-{shards}"
        base = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "ESBRIDGE_URL": options.url,
            "ESBRIDGE_INDEX": index,
            "ESBRIDGE_MAPPING__SHARDS": str(shards),
            "ESBRIDGE_MAPPING__REPLICAS": str(options.replicas),
        }
        for number, search_type in enumerate(SEARCH_TYPES):
            env = {**base, "ESBRIDGE_SEARCH__SEARCH_TYPE": search_type}
            reuse = ["--reuse"] if number else []
            evaluated = esbridge(["eval", str(SCIFACT), "--index", index, "--methods", "bm25,knn,default", *reuse], env)
            timed = esbridge(
                [
                    "bench",
                    str(SCIFACT),
                    "--index",
                    index,
                    "--modes",
                    "bm25,knn,hybrid",
                    "--limit",
                    str(options.latency_queries),
                ],
                env,
            )
            ndcg = {
                row["name"]: next(v for k, v in row.items() if k.lower() == "ndcg@10") for row in evaluated["results"]
            }
            p50 = {mode: values["p50"] for mode, values in timed["modes"].items()}
            rows.append({"shards": shards, "replicas": options.replicas, "search_type": search_type,
                         "ndcg@10": ndcg, "p50_ms": p50})  # fmt: skip
            print(json.dumps(rows[-1]), file=sys.stderr)
        if not options.keep:
            request = urllib.request.Request(f"{options.url}/{index}-v*", method="DELETE")  # noqa: S310
            urllib.request.urlopen(request, timeout=60).close()  # noqa: S310 - the cluster URL given
    print(json.dumps(rows, indent=2))
    print("| shards x replicas | search type | bm25 | knn | default | bm25 p50 ms | knn p50 ms | hybrid p50 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        n, p = row["ndcg@10"], row["p50_ms"]
        print(
            f"| {row['shards']} x {row['replicas']} | {row['search_type']} | {n['bm25']:.4f} | {n['knn']:.4f} | "
            f"{n['default']:.4f} | {p['bm25']:.1f} | {p['knn']:.1f} | {p['hybrid']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
