"""Registry search on the live engines: each tool its own hit, grouped under its server (gateway servers)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.config.fields import FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect_async
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.grouping import RegistryGroups
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import REGISTRY as REGISTRY_DIR

REGISTRY = REGISTRY_DIR / "servers.jsonl"


def gateway_servers() -> list[dict[str, Any]]:
    if not REGISTRY.is_file():
        pytest.fail(f"the shared registry data is missing: {REGISTRY} (ESBRIDGE_TEST_SHARED overrides ../shared)")
    records = [json.loads(line) for line in REGISTRY.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record["collection"] == "mcp-gateway-registry"]


QUERIES = [
    ("jira_get_transitions", "jira_get_transitions"),  # by its name
    ("which status changes can a ticket go through", "jira_get_transitions"),  # by what it does
    ("open a new ticket in the bug tracker", "jira_create_issue"),
]


def check_groups(groups: RegistryGroups | None, records: list[dict[str, Any]], tool: str) -> None:
    assert groups is not None
    atlassian = next(record for record in records if record["path"] == "/atlassian")
    server = next(server for server in groups.servers if server.id == atlassian["id"])
    assert tool in [match.tool_name for match in server.matching_tools]
    assert len(server.matching_tools) < len(atlassian["tools"])  # the tools that did not match are left out
    assert tool in [hit.tool_name for hit in groups.tools]  # the best 10 tools
    listed = next(hit for hit in groups.tools if hit.tool_name == tool)
    assert listed.server_path == "/atlassian" and listed.input_schema is not None
    written = next(item for item in atlassian["tools"] if item["name"] == tool)
    assert (listed.server_name, listed.description) == ("Atlassian", written["description"])


def registry_file(folder: Path, records: list[dict[str, Any]]) -> Path:
    path = folder / "registry.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(("query", "tool"), QUERIES)
def test_on_the_embedded_engine_a_query_naming_a_tool_finds_it_under_its_server(
    embedder: CachedEmbedder, tmp_path: Path, query: str, tool: str
) -> None:
    records = gateway_servers()
    engine = EmbeddedEngine(tmp_path / "db")
    try:
        manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
        options = IngestOptions(source_format="registry", source="registry")
        report = ingest(registry_file(tmp_path, records), engine=engine, manager=manager, embedder=embedder,
                        options=options)  # fmt: skip
        assert report.failed == []
        searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", embedder)
        response = asyncio.run(searcher.search(SearchRequest(query=query, group=True)))
    finally:
        engine.close()
    assert response.search_mode == "hybrid"
    check_groups(response.groups, records, tool)


@pytest.mark.parametrize(("query", "tool"), QUERIES)
def test_a_query_naming_a_tool_finds_it_under_its_server_and_in_tools(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path, query: str,
    tool: str,
) -> None:  # fmt: skip
    records = gateway_servers()
    path = registry_file(tmp_path, records)
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    assert ingest(path, engine=engine, manager=manager, embedder=embedder, options=options).failed == []

    async def run() -> RegistryGroups | None:
        client = connect_async(engine_settings, kind=engine_settings.engine)  # type: ignore[arg-type]
        try:
            response = await HybridSearcher(client, alias, embedder).search(SearchRequest(query=query, group=True))
            assert response.search_mode == "hybrid"
            return response.groups
        finally:
            await client.close()

    check_groups(asyncio.run(run()), records, tool)


def test_knn_per_type_listing_only_agents_leaves_tools_their_knn_candidates(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The engines take the kNN request for the types not listed (a must_not on entity_type in the kNN filter)."""
    agent = {"id": "travel", "name": "Travel agent", "description": "Books flights and hotels.",
             "skills": [{"id": "book", "name": "Book flight", "description": "Book airline tickets"}]}  # fmt: skip
    path = registry_file(tmp_path, [*gateway_servers(), agent])
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    assert ingest(path, engine=engine, manager=manager, embedder=embedder, options=options).failed == []
    pipeline = PipelineSettings(knn_per_type=["a2a_agent"])
    # The agent's skill ("Book airline tickets") is a document too and takes a place near the agent's: 20 places
    # leave room for both, whichever of them the engine's BM25 ranks higher.
    request = SearchRequest(query="open a new ticket in the bug tracker", explain=True, top_n=20)

    async def run() -> SearchResponse:
        client = connect_async(engine_settings, kind=engine_settings.engine)  # type: ignore[arg-type]
        try:
            return await HybridSearcher(client, alias, embedder, pipeline).search(request)
        finally:
            await client.close()

    response = asyncio.run(run())
    assert response.search_mode == "hybrid" and response.warnings == []
    by_knn = [hit for hit in response.results if hit.explain is not None and "knn" in hit.explain.retrievers]
    assert {hit.entity_type for hit in by_knn} >= {"tool", "a2a_agent"}


# A description long enough for several chunks, and a schema over the 64 KiB an answer carries.
LONG = "Creates a flow.\n\n" + "\n".join(f"- phase {n} orchestrates extractors" for n in range(150))
HUGE = {"type": "object", "properties": {f"f{n}": {"type": "string", "description": "x" * 60} for n in range(1000)}}
FLOW_SCHEMA = {"type": "object", "properties": {"phases": {"type": "array"}}}


def test_a_tool_record_is_stored_once_and_read_back_for_the_answer_that_shows_it(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The engines filter a stored-only object's fields by path (``metadata.server_id``), and answer the ids
    request that reads the tools' first chunks."""
    tools = [{"name": "create_flow", "description": LONG, "inputSchema": FLOW_SCHEMA},
             {"name": "bulk_export", "description": "Export every table at once", "inputSchema": HUGE}]  # fmt: skip
    record = {"id": "keboola", "name": "Keboola", "path": "/keboola", "description": "data platform", "tools": tools}
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    report = ingest(
        registry_file(tmp_path, [record]), engine=engine, manager=manager, embedder=embedder, options=options
    )
    assert report.failed == [] and [w for w in report.warnings if "bulk_export" in w]
    hits = engine.scan(alias, {"prefix": {"doc_id": "keboola/tools/create_flow"}}, ["metadata"], sort_field="chunk_id")
    stored = {hit.id: hit.source["metadata"] for hit in hits}
    assert len(stored) > 2 and stored.pop("keboola/tools/create_flow#0")["input_schema"] == FLOW_SCHEMA
    assert all("input_schema" not in metadata and "tool_description" not in metadata for metadata in stored.values())

    async def run(query: str) -> RegistryGroups:
        client = connect_async(engine_settings, kind=engine_settings.engine)  # type: ignore[arg-type]
        try:
            response = await HybridSearcher(client, alias, embedder).search(SearchRequest(query=query, group=True))
        finally:
            await client.close()
        assert response.warnings == [] and response.groups is not None
        return response.groups

    flow = next(
        hit for hit in asyncio.run(run("phase 140 orchestrates extractors")).tools if hit.tool_name == "create_flow"
    )
    assert (flow.server_name, flow.description, flow.input_schema) == ("Keboola", LONG, FLOW_SCHEMA)
    export = next(hit for hit in asyncio.run(run("export every table")).tools if hit.tool_name == "bulk_export")
    assert (export.input_schema, export.input_schema_bytes) == (None, len(json.dumps(HUGE).encode("utf-8")))


def test_a_query_for_what_an_agents_skill_does_lists_the_skill_with_its_agent(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder
) -> None:
    """Skills are documents of their own on every engine: the answer's ``skills`` names each one's agent."""
    agents = REGISTRY.with_name("agents.jsonl")
    if not agents.is_file():
        pytest.fail(f"the shared registry data is missing: {agents} (ESBRIDGE_TEST_SHARED overrides ../shared)")
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    assert ingest(agents, engine=engine, manager=manager, embedder=embedder, options=options).failed == []
    # A2ABench's skill "Search": "Search questions by keyword or tag and return canonical citation URLs."
    request = SearchRequest(query="search developer questions by tag and get citation links", group=True)

    only_skills = request.model_copy(update={"filters": Filters(terms={"entity_type": ["skill"]})})

    async def run(request: SearchRequest) -> RegistryGroups | None:
        client = connect_async(engine_settings, kind=engine_settings.engine)  # type: ignore[arg-type]
        try:
            return (await HybridSearcher(client, alias, embedder).search(request)).groups
        finally:
            await client.close()

    for groups in (asyncio.run(run(request)), asyncio.run(run(only_skills))):
        assert groups is not None
        skill = next(hit for hit in groups.skills if hit.id == "a2a-registry:a2abench/skills/search")  # its A2A id
        assert (skill.name, skill.agent_id, skill.agent_name) == ("Search", "a2a-registry:a2abench", "A2ABench")
        # its agent is listed, brought in by the skill when the agent itself is no candidate
        agent = next(hit for hit in groups.agents if hit.id == "a2a-registry:a2abench")
        assert agent.name == "A2ABench" and agent.score >= skill.score


def write_catalog(engine: Engine, index: str, parent: str) -> None:
    """A server and its tool, and a note, under field names of its own; the tool names its server in ``parent``."""
    keyword = {"type": "keyword"}
    properties = {"name": {"type": "text"}, "text": {"type": "text"}, "kind": keyword, parent: keyword}
    documents: dict[str, dict[str, Any]] = {
        "jira": {"name": "Jira", "text": "jira tracker server", "kind": "mcp_server"},
        "create": {"name": "create_issue", "text": "create a jira issue in the tracker", "kind": "tool",
                   parent: "jira", "metadata": {"tool_description": "Create a Jira\nissue"}},
        "n1": {"name": "note", "text": "a note on an issue of a magazine", "kind": "note"},
    }  # fmt: skip
    engine.create_index(index, {"mappings": {"properties": properties}})
    engine.bulk(index, [BulkAction(op="index", id=key, document=doc) for key, doc in documents.items()])
    engine.refresh(index)


def grouped_search(settings: Settings, index: str, fields: FieldMap) -> SearchResponse:
    async def run() -> SearchResponse:
        client = connect_async(settings, kind=settings.engine)  # type: ignore[arg-type]
        try:
            searcher = HybridSearcher(client, index, None, fields=fields)
            return await searcher.search(SearchRequest(query="create jira issue tracker", top_n=5, group=True))
        finally:
            await client.close()

    return asyncio.run(run())


def check_jira_groups(response: SearchResponse) -> None:
    assert response.warnings == [] and response.groups is not None
    [tool] = response.groups.tools
    assert (tool.tool_name, tool.server_id, tool.description) == ("create_issue", "jira", "Create a Jira\nissue")
    jira = next(server for server in response.groups.servers if server.id == "jira")
    assert (jira.name, [match.tool_name for match in jira.matching_tools]) == ("Jira", ["create_issue"])
    assert response.details.timings_ms["grouping"] > 0


def test_an_index_esbridge_did_not_write_is_grouped_through_its_field_map(
    engine: Engine, engine_settings: Settings, index_name: str
) -> None:
    """The engines return the mapped type, title and parent fields a grouped answer reads, and the ids request
    reads the tool's own record (its documents are no chunks)."""
    write_catalog(engine, index_name, parent="server")
    fields = FieldMap(text={"name": 1.0, "text": 1.0}, content=["text"], title="name", type="kind", parent="server")
    check_jira_groups(grouped_search(engine_settings, index_name, fields))


def test_index_inspect_proposes_the_parent_field_grouping_reads(
    engine: Engine, engine_settings: Settings, engine_kind: str, index_name: str, tmp_path: Path
) -> None:
    write_catalog(engine, index_name, parent="server_id")
    config = tmp_path / "esbridge.toml"
    options = ["--url", str(engine_settings.url), "--engine", engine_kind, "--config", str(config)]
    inspected = CliRunner().invoke(main, ["index", "inspect", index_name, "--write", *options])
    assert inspected.exit_code == 0, inspected.output

    fields = load_settings(config).fields[index_name]
    assert (fields.parent, fields.type, fields.title, fields.id) == ("server_id", "kind", "name", None)
    check_jira_groups(grouped_search(engine_settings, index_name, fields))
