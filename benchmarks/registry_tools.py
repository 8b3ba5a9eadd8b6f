"""Tool retrieval for tasks: esbridge's registry search against a plain hybrid search over one document per tool.

    .venv/bin/python benchmarks/registry_tools.py [--registry ../shared/data/registry/servers.jsonl] \
        [--tasks benchmarks/data/registry_tasks.jsonl] [--repeat 3] [--json]

The servers of the gateway, Docker and LiveMCPBench collections (110 servers, 1,430 tools) are indexed twice
on the embedded engine with the configured model: as registry records (``--format registry``: servers and
tools, kNN per entity type, ``--group``), and as one JSONL record per tool (its name as title, its description
as text) searched with the default pipeline. Each task of the development set (hand-written from these
records; no public benchmark's test set) names the tools it needs; recall@10 is the share of them among the
first 10 tools returned. Search p50 is timed over the tasks, ``--repeat`` times each, both configurations
alternating, with the response and query-vector caches off (the query is embedded each time). Prints one
table (or JSON) for docs/registries.md and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from esbridge.config import load_settings
from esbridge.config.pipeline import CacheSettings, PipelineSettings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.factory import open_embedder
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher

COLLECTIONS = ("mcp-gateway-registry", "docker-mcp-registry", "livemcpbench")
TYPES = ["mcp_server", "virtual_server", "a2a_agent", "skill", "tool"]
NO_CACHE = CacheSettings(embeddings=0, results=0)  # every search timed whole, the query embedded each time
REGISTRY_PIPELINE = PipelineSettings(knn_per_type=TYPES, knn_k_per_type=30, cache=NO_CACHE)
PLAIN_PIPELINE = PipelineSettings(cache=NO_CACHE)


def servers(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record["collection"] in COLLECTIONS]


def plain_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": f"{server['path']}:{tool['name']}", "title": tool["name"], "text": tool.get("description") or ""}
        for server in records
        for tool in server["tools"]
    ]


def load(folder: Path, name: str, records: Sequence[dict[str, Any]], embedder: Embedder, fmt: str) -> EmbeddedEngine:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    engine = EmbeddedEngine(folder / name)
    manager = IndexManager(engine, name, IndexParameters(dimension=embedder.dimension))
    report = ingest(path, engine=engine, manager=manager, embedder=embedder,
                    options=IngestOptions(source_format=fmt, source=name))  # type: ignore[arg-type]  # fmt: skip
    if report.failed:
        raise SystemExit(f"{name}: {len(report.failed)} documents failed: {report.failed[:3]}")
    return engine


async def registry_tools(searcher: HybridSearcher, task: str) -> list[str]:
    response = await searcher.search(SearchRequest(query=task, top_n=10, group=True))
    groups = response.groups
    return [f"{tool.server_path}:{tool.tool_name}" for tool in (groups.tools if groups else [])][:10]


async def plain_tools(searcher: HybridSearcher, task: str) -> list[str]:
    response = await searcher.search(SearchRequest(query=task, top_n=10))
    return [hit.doc_id for hit in response.results][:10]


def recall(found: Sequence[str], needed: Sequence[str]) -> float:
    return len(set(found) & set(needed)) / len(needed)


async def measure(
    registry: HybridSearcher, plain: HybridSearcher, tasks: Sequence[dict[str, Any]], repeat: int
) -> dict[str, Any]:
    rows = []
    times: dict[str, list[float]] = {"registry": [], "plain": []}
    for task in tasks:
        for _ in range(repeat):
            for name, run, searcher in (("registry", registry_tools, registry), ("plain", plain_tools, plain)):
                started = time.perf_counter()
                await run(searcher, task["task"])
                times[name].append((time.perf_counter() - started) * 1000)
        registry_found = await registry_tools(registry, task["task"])
        plain_found = await plain_tools(plain, task["task"])
        rows.append(
            {
                "task": task["task"],
                "registry": recall(registry_found, task["tools"]),
                "plain": recall(plain_found, task["tools"]),
            }
        )
    mean = {name: round(statistics.fmean(row[name] for row in rows), 4) for name in ("registry", "plain")}
    wins = sum(row["registry"] > row["plain"] for row in rows)
    losses = sum(row["registry"] < row["plain"] for row in rows)
    p50 = {name: round(statistics.median(samples), 2) for name, samples in times.items()}
    return {"tasks": len(rows), "recall@10": mean, "wins": wins, "losses": losses, "p50_ms": p50, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, default=Path("../shared/data/registry/servers.jsonl"))
    parser.add_argument("--tasks", type=Path, default=Path(__file__).parent / "data" / "registry_tasks.jsonl")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    records = servers(args.registry)
    tasks = [json.loads(line) for line in args.tasks.read_text(encoding="utf-8").splitlines() if line.strip()]
    settings = load_settings()
    embedder = open_embedder(settings.embedding)
    with tempfile.TemporaryDirectory() as folder:
        registry_engine = load(Path(folder), "registry", records, embedder, "registry")
        plain_engine = load(Path(folder), "plain", plain_records(records), embedder, "jsonl")
        registry = HybridSearcher(AsyncEmbeddedEngine(engine=registry_engine), "registry", embedder, REGISTRY_PIPELINE)
        plain = HybridSearcher(AsyncEmbeddedEngine(engine=plain_engine), "plain", embedder, PLAIN_PIPELINE)
        try:
            result = asyncio.run(measure(registry, plain, tasks, args.repeat))
        finally:
            registry_engine.close()
            plain_engine.close()
            embedder.close()
    result["model"] = embedder.name
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['tasks']} tasks, model {result['model']}")
    print(f"recall@10  registry {result['recall@10']['registry']:.4f}  plain {result['recall@10']['plain']:.4f}")
    print(f"tasks better / worse: {result['wins']} / {result['losses']}")
    print(f"search p50 ms  registry {result['p50_ms']['registry']}  plain {result['p50_ms']['plain']}")
    for row in result["rows"]:
        print(f"  {row['registry']:.2f} {row['plain']:.2f}  {row['task']}")


if __name__ == "__main__":
    main()
