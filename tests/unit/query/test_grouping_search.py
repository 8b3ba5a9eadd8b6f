"""Registry grouping through the whole search on the embedded engine: what a grouped answer tells an agent
about each tool comes from the index, not only from hand-made candidates."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from esbridge.config.fields import FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.grouping import RegistryGroups
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import REGISTRY, require
from tests.support.hashing import HashingEmbedder

# Long enough to be cut into several chunks, with the line breaks of a real tool's description.
LONG = "Creates a flow.\n\nCONSIDERATIONS:\n" + "\n".join(f"- phase {n} orchestrates extractors" for n in range(150))
FLOW_SCHEMA = {"type": "object", "properties": {"phases": {"type": "array"}}}
# Over the 64 KiB an answer carries, as JSON.
HUGE_SCHEMA = {
    "type": "object",
    "properties": {f"field_{n}": {"type": "string", "description": "x" * 60} for n in range(1000)},
}
RECORDS = [
    {"id": "keboola", "name": "Keboola", "path": "/keboola", "description": "data platform",
     "tools": [{"name": "create_flow", "description": LONG, "inputSchema": FLOW_SCHEMA},
               {"name": "bulk_export", "description": "Export every table at once", "inputSchema": HUGE_SCHEMA}]},
    {"id": "weather", "name": "Weather Service", "path": "/weather", "description": "about the sky",
     "tools": [{"name": "forecast", "description": "Forecast rain\nfor a city.", "inputSchema": {"type": "object"}},
               {"name": "rain_city", "description": ""}]},
]  # fmt: skip


def indexed(tmp_path: Path) -> tuple[EmbeddedEngine, IngestReport]:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "registry.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "db")
    manager = IndexManager(engine, "registry", IndexParameters(dimension=HashingEmbedder().dimension))
    options = IngestOptions(source_format="registry", source="registry")
    report = ingest(path, engine=engine, manager=manager, embedder=HashingEmbedder(), options=options)
    assert report.failed == []
    return engine, report


def grouped(tmp_path: Path, query: str, filters: Filters | None = None) -> RegistryGroups:
    engine, _ = indexed(tmp_path)
    try:
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", HashingEmbedder())
        request = SearchRequest(query=query, top_n=5, group=True, filters=filters or Filters())
        response = asyncio.run(searcher.search(request))
    finally:
        engine.close()
    assert response.groups is not None and response.warnings == []
    return response.groups


def stored_metadata(engine: EmbeddedEngine, doc_id: str) -> dict[str, dict[str, Any]]:
    hits = engine.scan("registry", {"term": {"doc_id": doc_id}}, ["metadata"], sort_field="chunk_id")
    return {hit.id: dict(hit.source.get("metadata") or {}) for hit in hits}


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
    assert (flow.description, flow.input_schema) == (LONG, FLOW_SCHEMA)


def test_a_tool_cut_into_chunks_stores_its_record_once_on_its_first_chunk(tmp_path: Path) -> None:
    engine, _ = indexed(tmp_path)
    try:
        chunks = stored_metadata(engine, "keboola/tools/create_flow")
    finally:
        engine.close()
    assert len(chunks) > 2
    first = chunks.pop("keboola/tools/create_flow#0")
    assert (first["input_schema"], first["tool_description"]) == (FLOW_SCHEMA, LONG)
    # the other chunks keep what joins them to their server, and no copy of the record
    assert all(metadata == {"server_id": "keboola", "server_name": "Keboola", "server_path": "/keboola",
                            "tool_name": "create_flow"} for metadata in chunks.values())  # fmt: skip


def test_an_input_schema_over_the_cap_is_kept_whole_out_of_answers_with_a_warning(tmp_path: Path) -> None:
    size = len(json.dumps(HUGE_SCHEMA).encode("utf-8"))
    engine, report = indexed(tmp_path)
    try:
        stored = stored_metadata(engine, "keboola/tools/bulk_export")["keboola/tools/bulk_export#0"]
    finally:
        engine.close()
    assert stored["oversized_input_schema"] == HUGE_SCHEMA and stored["input_schema_bytes"] == size
    assert "input_schema" not in stored
    assert [warning for warning in report.warnings if "bulk_export" in warning] == [
        f"keboola/tools/bulk_export: tool 'bulk_export': its input schema is {size / 1024:.1f} KiB as JSON, over "
        "the 64 KiB a search answer carries; it is stored whole, once, as metadata.oversized_input_schema of chunk "
        "'keboola/tools/bulk_export#0' (esbridge export writes it), and grouped answers give its size "
        "(input_schema_bytes) instead"
    ]
    export = next(
        hit for hit in grouped(tmp_path / "again", "export every table").tools if hit.tool_name == "bulk_export"
    )
    assert (export.input_schema, export.input_schema_bytes) == (None, size)
    assert export.description == "Export every table at once"


def test_a_server_brought_in_by_its_tool_has_its_name(tmp_path: Path) -> None:
    only_tools = Filters(terms={"entity_type": ["tool"]})  # so the server itself is no candidate
    groups = grouped(tmp_path, "forecast rain for a city", only_tools)
    weather = next(server for server in groups.servers if server.id == "weather")
    assert (weather.name, weather.path) == ("Weather Service", "/weather")


def test_a_tool_of_an_index_esbridge_did_not_write_shows_its_own_record(tmp_path: Path) -> None:
    # Its documents are not chunks (``t1``, no ``t1#0``): the tool's record is on the document itself.
    text = {"name": {"type": "text"}, "text": {"type": "text"}, "entity_type": {"type": "keyword"}}
    tool: dict[str, Any] = {"server_id": "jira", "tool_name": "create_issue", "input_schema": {"type": "object"}}
    tool["tool_description"] = "Create a  Jira\nissue"
    documents: dict[str, dict[str, Any]] = {
        "t1": {"name": "create issue", "text": "Create a jira issue", "entity_type": "tool", "metadata": tool},
        "s1": {"name": "jira", "text": "jira server issue", "entity_type": "mcp_server"},
        "x1": {"name": "other", "text": "an issue of a magazine", "entity_type": "note"},
    }
    fields = FieldMap(text={"name": 1.0, "text": 1.0}, content=["text"], title="name", type="entity_type")
    engine = EmbeddedEngine(tmp_path / "db")
    try:
        engine.create_index("catalog", {"mappings": {"properties": text}})
        engine.bulk("catalog", [BulkAction(op="index", id=key, document=doc) for key, doc in documents.items()])
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "catalog", None, fields=fields)
        response = asyncio.run(searcher.search(SearchRequest(query="jira issue", top_n=5, group=True)))
    finally:
        engine.close()
    assert response.groups is not None and response.warnings == []
    [hit] = response.groups.tools
    assert (hit.tool_name, hit.description, hit.input_schema) == (
        "create_issue",
        "Create a  Jira\nissue",
        {"type": "object"},
    )
    jira = next(server for server in response.groups.servers if server.id == "jira")
    assert [match.description for match in jira.matching_tools] == ["Create a  Jira\nissue"]


def _registry_searched(
    tmp_path: Path, lines: list[str], request: SearchRequest, pipeline: PipelineSettings | None = None
) -> SearchResponse:
    """``request`` answered by an embedded index of the registry records ``lines`` (ingested as a registry file)."""
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "servers.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "db")
    try:
        manager = IndexManager(engine, "registry", IndexParameters(dimension=HashingEmbedder().dimension))
        options = IngestOptions(source_format="registry", source="registry")
        assert ingest(path, engine=engine, manager=manager, embedder=HashingEmbedder(), options=options).failed == []
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", HashingEmbedder(), pipeline)
        return asyncio.run(searcher.search(request))
    finally:
        engine.close()


def test_a_matched_tool_of_the_real_registry_brings_its_server(tmp_path: Path) -> None:
    lines = require(REGISTRY / "servers.jsonl").read_text(encoding="utf-8").splitlines()
    gateway = [line for line in lines if '"collection": "mcp-gateway-registry"' in line]
    only_tools = Filters(terms={"entity_type": ["tool"]})  # so no server is a candidate itself
    request = SearchRequest(query="jira_get_transitions", group=True, filters=only_tools)
    response = _registry_searched(tmp_path, gateway, request)
    assert response.groups is not None and response.warnings == []
    assert response.groups.tools[0].tool_name == "jira_get_transitions"
    atlassian = next(server for server in response.groups.servers if server.path == "/atlassian")
    assert atlassian.name == "Atlassian" and atlassian.score == response.groups.tools[0].score
    assert "jira_get_transitions" in [match.tool_name for match in atlassian.matching_tools]


def test_every_tool_a_search_of_the_real_registry_returns_is_among_its_servers_matching_tools(
    tmp_path: Path,
) -> None:
    lines = require(REGISTRY / "servers.jsonl").read_text(encoding="utf-8").splitlines()
    [fininfo] = [line for line in lines if json.loads(line)["id"] == "gateway:fininfo"]  # a server with 2 tools
    response = _registry_searched(tmp_path, [fininfo], SearchRequest(query="stock data", group=True))
    assert response.groups is not None and response.warnings == []
    returned = {hit.doc_id: hit.score for hit in response.results}
    tools = {doc.rsplit("/", 1)[1]: score for doc, score in returned.items() if "/tools/" in doc}
    # the server and both of its tools, the last of the three at 0 (min-max fusion's last candidate)
    assert set(returned) == {"gateway:fininfo", *(f"gateway:fininfo/tools/{name}" for name in tools)}
    assert len(tools) == 2 and min(tools.values()) == 0.0
    [server] = response.groups.servers
    assert {match.tool_name: match.score for match in server.matching_tools} == tools
    assert {tool.tool_name: tool.score for tool in response.groups.tools} == tools


def test_groups_leave_out_what_the_results_floor_leaves_out(tmp_path: Path) -> None:
    lines = require(REGISTRY / "servers.jsonl").read_text(encoding="utf-8").splitlines()
    gateway = [line for line in lines if '"collection": "mcp-gateway-registry"' in line]
    request = SearchRequest(query="jira issue transitions", top_n=10, group=True)

    def listed(groups: RegistryGroups) -> dict[str, float]:
        tools = {f"{tool.server_id}/{tool.tool_name}": tool.score for tool in groups.tools}
        return {**tools, **{server.id: server.score for server in groups.servers}}

    floored = PipelineSettings.model_validate({"shaping": {"floor": 0.5}, "cache": {"results": 0}})
    unfloored = _registry_searched(tmp_path / "all", gateway, request)
    assert unfloored.groups is not None
    assert any(0 < score < 0.5 for score in listed(unfloored.groups).values())  # something for the floor to cut
    response = _registry_searched(tmp_path / "floor", gateway, request, floored)
    assert response.groups is not None and response.results
    assert min(hit.score for hit in response.results) >= 0.5
    assert listed(response.groups) and min(listed(response.groups).values()) >= 0.5
