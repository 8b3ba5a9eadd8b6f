"""Registry grouping through the whole search on the embedded engine: what a grouped answer tells an agent
about each tool comes from the index, not only from hand-made candidates."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.grouping import RegistryGroups
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.hashing import HashingEmbedder

# Long enough to be cut into several chunks, with the line breaks of a real tool's description.
LONG = "Creates a flow.\n\nCONSIDERATIONS:\n" + "\n".join(f"- phase {n} orchestrates extractors" for n in range(150))
RECORDS = [
    {"id": "keboola", "name": "Keboola", "path": "/keboola", "description": "data platform",
     "tools": [{"name": "create_flow", "description": LONG}]},
    {"id": "weather", "name": "Weather Service", "path": "/weather", "description": "about the sky",
     "tools": [{"name": "forecast", "description": "Forecast rain\nfor a city.", "inputSchema": {"type": "object"}},
               {"name": "rain_city", "description": ""}]},
]  # fmt: skip


def grouped(tmp_path: Path, query: str, filters: Filters | None = None) -> RegistryGroups:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "registry.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    try:
        manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
        options = IngestOptions(source_format="registry", source="registry")
        assert ingest(path, engine=engine, manager=manager, embedder=embedder, options=options).failed == []
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", embedder)
        request = SearchRequest(query=query, top_n=5, group=True, filters=filters or Filters())
        response = asyncio.run(searcher.search(request))
    finally:
        engine.close()
    assert response.groups is not None
    return response.groups


def test_a_grouped_tool_carries_its_whole_description_as_written(tmp_path: Path) -> None:
    groups = grouped(tmp_path, "forecast rain for a city")
    forecast = next(hit for hit in groups.tools if hit.tool_name == "forecast")
    assert forecast.description == "Forecast rain\nfor a city."
    blank = next(hit for hit in grouped(tmp_path / "again", "rain_city").tools if hit.tool_name == "rain_city")
    assert blank.description is None  # "" as written
    weather = next(server for server in groups.servers if server.id == "weather")
    assert [match.description for match in weather.matching_tools if match.tool_name == "forecast"] == [
        "Forecast rain\nfor a city."
    ]


def test_a_tool_cut_into_chunks_still_carries_all_of_its_description(tmp_path: Path) -> None:
    groups = grouped(tmp_path, "phase 140 orchestrates extractors")
    flow = next(hit for hit in groups.tools if hit.tool_name == "create_flow")
    assert flow.description == LONG


def test_a_server_brought_in_by_its_tool_has_its_name(tmp_path: Path) -> None:
    only_tools = Filters(terms={"entity_type": ["tool"]})  # so the server itself is no candidate
    groups = grouped(tmp_path, "forecast rain for a city", only_tools)
    weather = next(server for server in groups.servers if server.id == "weather")
    assert (weather.name, weather.path) == ("Weather Service", "/weather")
