"""`esbridge mcp` as a real stdio MCP server, called with the official SDK's client: a real search comes back.

The server runs on the embedded engine (no cluster needed) over a small corpus ingested with the real
model, and loads that model itself, as an agent's MCP host would start it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines.embedded import EmbeddedEngine
from tests.integration.engines import load_records

ROOT = Path(__file__).resolve().parents[2]
RECORDS: list[dict[str, Any]] = [
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
     "tags": ["energy"]},
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough.",
     "tags": ["food"]},
    {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate power.", "tags": ["energy"]},
]  # fmt: skip


def test_the_mcp_server_answers_search_and_index_status_over_stdio(embedder: CachedEmbedder, tmp_path: Path) -> None:
    data = tmp_path / "data"
    engine = EmbeddedEngine(data)
    try:
        load_records(engine, "notes", embedder, tmp_path, RECORDS)
    finally:
        engine.close()
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "esbridge", "mcp", "--index", "notes"],
        env={
            "PYTHONPATH": str(ROOT),
            "ESBRIDGE_DATA_DIR": str(data),
            "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
            "ESBRIDGE_EMBEDDING__MODEL": os.environ["ESBRIDGE_EMBEDDING__MODEL"],  # the fixture's model
            "ESBRIDGE_EMBEDDING__BACKEND": os.environ["ESBRIDGE_EMBEDDING__BACKEND"],
            "HOME": os.environ.get("HOME", str(tmp_path)),
        },
        cwd=tmp_path,
    )

    async def session_calls() -> tuple[dict[str, Any], Any, Any, Any, Any]:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = {tool.name: tool.output_schema for tool in (await session.list_tools()).tools}
                found = await session.call_tool("search", {"query": "how is bread leavened", "top_n": 2})
                filtered = await session.call_tool(
                    "search", {"query": "power", "filters": {"terms": {"tags": ["energy"]}}, "explain": True}
                )
                status = await session.call_tool("index_status", {})
                bad = await session.call_tool("search", {"query": "x", "fusion": "no-such-fusion"})
        return tools, found, filtered, status, bad

    tools, found, filtered, status, bad = anyio.run(session_calls)

    assert {"search", "index_status"} <= set(tools)
    assert "results" in tools["search"]["properties"]
    assert "chunks" in tools["index_status"]["properties"]
    assert not found.is_error, found.content
    answer = found.structured_content
    assert answer["search_mode"] == "hybrid"
    assert answer["results"][0]["doc_id"] == "bread"
    assert len(answer["results"]) <= 2
    assert {hit["doc_id"] for hit in filtered.structured_content["results"]} <= {"solar", "wind"}
    assert "explain" in filtered.structured_content["results"][0]
    assert status.structured_content["index"] == "notes"
    assert status.structured_content["chunks"] == len(RECORDS)
    assert status.structured_content["model"]
    assert set(status.structured_content) == {
        "index", "engine", "exists", "indices", "chunks", "partial", "model", "index_model"
    }  # fmt: skip
    assert bad.is_error
    assert "unknown fusion method" in bad.content[0].text
    assert "Traceback" not in bad.content[0].text
