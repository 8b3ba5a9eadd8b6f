"""The registry source on real MCP server and A2A agent records (../shared/data/registry), plus hand-made
records for the cases the data lacks: a virtual server, a disabled server, a repeated tool name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry, tool_doc_id
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import REGISTRY
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry

HAND_MADE: list[dict[str, Any]] = [
    # hand-made: the data has no virtual servers, no disabled entities and no explicit entity_type
    {"id": "vs-dev", "entity_type": "virtual_server", "name": "Developer toolbox", "path": "/vs-dev",
     "description": "A virtual server bundling code tools.", "tags": "dev, code",
     "metadata": {"team": "platform", "owners": ["ana", "li"]},
     "tools": [{"name": "lint", "description": "Check code style", "inputSchema": {"type": "object"}},
               {"name": "lint", "description": "Check code style"},
               {"name": "lint", "description": "Check code style"}]},
    {"path": "/old-weather", "name": "Old weather", "description": "Forecasts.", "is_enabled": False,
     "tools": [{"name": "forecast", "description": "Weather forecast for a city"}]},
    {"id": "no-name", "description": "a record without its name"},
]  # fmt: skip


def real_records(file: str, collection: str) -> list[dict[str, Any]]:
    path = REGISTRY / file
    if not path.is_file():
        pytest.fail(f"the shared registry data is missing: {path} (ESBRIDGE_TEST_SHARED overrides ../shared)")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record["collection"] == collection]


def test_a_server_becomes_its_document_and_one_per_tool(tmp_path: Path) -> None:
    gateway = real_records("servers.jsonl", "mcp-gateway-registry")
    atlassian = next(record for record in gateway if record["path"] == "/atlassian")
    read = list(read_registry(write_registry(tmp_path, [atlassian])))
    server, tools = read[0], read[1:]
    assert isinstance(server, Document) and server.entity_type == "mcp_server" and server.path == "/atlassian"
    assert len(tools) == len(atlassian["tools"])
    text = "\n".join(section.text for section in server.sections)
    assert atlassian["description"].strip() in text
    assert "/atlassian" not in text  # the path is stored, not embedded
    first = atlassian["tools"][0]
    assert f"{first['name']}: " in text
    tool = tools[0]
    assert isinstance(tool, Document)
    assert (tool.doc_id, tool.entity_type, tool.title) == (
        tool_doc_id(atlassian["id"], first["name"]),
        "tool",
        first["name"],
    )
    assert tool.links == (atlassian["id"],)
    assert tool.metadata["server_path"] == "/atlassian" and tool.metadata["tool_name"] == first["name"]
    assert tool.metadata["input_schema"] == first["inputSchema"]
    assert "properties" not in " ".join(section.text for section in tool.sections)  # the schema is not embedded


def test_a_field_that_metadata_gives_another_value_is_a_warning_not_a_silent_loss(tmp_path: Path) -> None:
    record = {"id": "s", "name": "S", "links": ["a"], "source": "x", "metadata": {"links": ["b"], "source": "x"}}
    server, *tools = read_registry(write_registry(tmp_path, [record]))
    assert isinstance(server, Document) and tools == []
    assert server.metadata == {"links": ["b"], "source": "x"}
    assert server.warnings == (
        "field 'links' is given at the top level (array) and in metadata (array); the value in metadata is kept, "
        "the other is not indexed",
    )


def test_agents_are_read_with_their_skills() -> None:
    read = list(read_registry(REGISTRY / "agents.jsonl"))
    assert all(isinstance(item, Document) and item.entity_type in ("a2a_agent", "skill") for item in read)
    agents = [item for item in read if isinstance(item, Document) and item.entity_type == "a2a_agent"]
    assert len(agents) == 135
    a2abench = next(a for a in agents if isinstance(a, Document) and a.doc_id == "a2a-registry:a2abench")
    skills = next(section for section in a2abench.sections if section.headings == ("Skills",))
    assert skills.text.startswith("Search: Search questions by keyword or tag")


def test_the_whole_registry_is_read_without_losing_a_record() -> None:
    read = [item for name in ("servers.jsonl", "agents.jsonl") for item in read_registry(REGISTRY / name)]
    assert not [item for item in read if isinstance(item, Problem)]
    kinds = [item.entity_type for item in read if isinstance(item, Document)]
    # 12,449 tools in the data, 4 of them listed twice identically by their server (each warned about)
    assert (kinds.count("mcp_server"), kinds.count("a2a_agent"), kinds.count("tool")) == (1421, 135, 12445)
    assert kinds.count("skill") == 278  # every skill of the 135 agents, each a document of its own


def test_hand_made_records_types_lifecycle_repeats_and_problems(tmp_path: Path) -> None:
    read = list(read_registry(write_registry(tmp_path, HAND_MADE)))
    by_id = {item.doc_id: item for item in read if isinstance(item, Document)}
    virtual = by_id["vs-dev"]
    assert virtual.entity_type == "virtual_server" and virtual.tags == ("dev", "code")
    assert "team: platform" in "\n".join(section.text for section in virtual.sections)
    assert set(by_id) >= {"vs-dev/tools/lint", "vs-dev/tools/lint~2"}
    assert virtual.warnings == (
        "tool name 'lint' is repeated with other content: the repeat is 'lint~2'",
        "tool 'lint' is listed twice, identically: kept once",
    )
    old = by_id["/old-weather"]  # the path stands in for the missing id
    assert old.status == "disabled" and by_id["/old-weather/tools/forecast"].status == "disabled"
    problems = [item for item in read if isinstance(item, Problem)]
    assert len(problems) == 1 and problems[0].line == 3 and "name" in problems[0].reason


def ingest_registry(engine: EmbeddedEngine, path: Path, **options: Any) -> IngestReport:
    """``path`` ingested as a registry into the index ``registry`` of ``engine``, with hashing vectors."""
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    settings = IngestOptions(source_format="registry", source="registry", **options)
    return ingest(path, engine=engine, manager=manager, embedder=embedder, options=settings)


def test_a_tool_is_found_as_its_own_hit_and_disabled_servers_stay_out(tmp_path: Path, engine: EmbeddedEngine) -> None:
    records = [*real_records("servers.jsonl", "mcp-gateway-registry"), *HAND_MADE[:2]]
    embedder = HashingEmbedder()
    report = ingest_registry(engine, write_registry(tmp_path, records))
    assert report.failed == []
    assert report.documents_indexed == len(records) + sum(len(r.get("tools", [])) for r in records) - 1

    async def run(request: SearchRequest) -> list[tuple[str, str | None]]:
        response = await HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", embedder).search(request)
        return [(hit.doc_id, hit.entity_type) for hit in response.results]

    found = asyncio.run(run(SearchRequest(query="current time in a timezone", filters=Filters(
        terms={"entity_type": ["tool"]}))))  # fmt: skip
    assert found and all(kind == "tool" for _, kind in found)
    assert any(doc.startswith(next(r["id"] for r in records if r["path"] == "/currenttime")) for doc, _ in found[:3])
    forecast = asyncio.run(run(SearchRequest(query="weather forecast for a city")))
    assert not any(doc.startswith("/old-weather") for doc, _ in forecast)
    shown = asyncio.run(run(SearchRequest(query="weather forecast for a city",
                                          filters=Filters(include_disabled=True))))  # fmt: skip
    assert shown[0][0] in {"/old-weather", "/old-weather/tools/forecast"}


def test_a_query_naming_a_tool_returns_it_under_its_server_and_in_tools(tmp_path: Path, engine: EmbeddedEngine) -> None:
    records = real_records("servers.jsonl", "mcp-gateway-registry")
    ingest_registry(engine, write_registry(tmp_path, records))
    atlassian = next(r for r in records if r["path"] == "/atlassian")
    wanted = next(tool for tool in atlassian["tools"] if tool["name"] == "jira_get_transitions")
    hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", HashingEmbedder())
    # Hashing vectors are word overlap: RRF, not the qpp model fitted on a real model's scores.
    response = asyncio.run(hybrid.search(SearchRequest(query="jira get transitions", group=True, fusion="rrf")))
    groups = response.groups
    assert groups is not None
    server = next(server for server in groups.servers if server.id == atlassian["id"])
    matched = [tool.tool_name for tool in server.matching_tools]
    assert matched[0] == "jira_get_transitions"
    assert len(matched) < len(atlassian["tools"])  # tools that did not match are left out
    listed = next(tool for tool in groups.tools if tool.tool_name == "jira_get_transitions")
    assert (listed.server_id, listed.server_path) == (atlassian["id"], "/atlassian")
    assert listed.input_schema == wanted["inputSchema"]


def test_a_record_that_turns_malformed_keeps_its_tools_as_well_as_itself(
    tmp_path: Path, engine: EmbeddedEngine
) -> None:
    server = {"id": "jira", "name": "Jira", "tools": [{"name": "open_issue", "description": "Open an issue"}]}
    other = {"id": "slack", "name": "Slack", "tools": [{"name": "post", "description": "Post a message"}]}
    ingest_registry(engine, write_registry(tmp_path, [server, other]))
    broken = {**server, "tools": "open_issue"}
    report = ingest_registry(engine, write_registry(tmp_path, [broken]))
    assert len(report.failed) == 1
    kept = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    assert kept == {"jira", "jira/tools/open_issue"}  # slack is gone from the file; jira only failed to parse


def test_a_server_read_whole_loses_its_removed_tools_when_another_line_has_no_readable_id(
    tmp_path: Path, engine: EmbeddedEngine
) -> None:
    tools = [{"name": f"t{n}", "description": f"Tool number {n}"} for n in range(5)]
    server = {"id": "jira", "name": "Jira", "tools": tools}
    other = {"id": "slack", "name": "Slack", "tools": [{"name": "post", "description": "Post a message"}]}
    ingest_registry(engine, write_registry(tmp_path, [server, other]), max_delete_share=1.0)
    path = write_registry(tmp_path, [{**server, "tools": tools[:3]}, other])
    with path.open("a", encoding="utf-8") as file:  # a line still being written: its id cannot be read
        file.write('{"id": "ne')
    report = ingest_registry(engine, path, max_delete_share=1.0)
    engine.refresh("registry")
    kept = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    assert len(report.failed) == 1
    assert report.deleted == 2
    assert kept == {"jira", "jira/tools/t0", "jira/tools/t1", "jira/tools/t2", "slack", "slack/tools/post"}


def test_what_a_tool_or_skill_carries_besides_its_name_is_stored(tmp_path: Path) -> None:
    docker = real_records("servers.jsonl", "docker-mcp-registry")
    server = next(record for record in docker if any("arguments" in tool for tool in record["tools"]))
    wanted = next(tool for tool in server["tools"] if "arguments" in tool)
    docs = [item for item in read_registry(write_registry(tmp_path, [server])) if isinstance(item, Document)]
    tool = next(doc for doc in docs if doc.doc_id == tool_doc_id(server["id"], wanted["name"]))
    # Docker's tools have no inputSchema: their arguments are all there is of one
    assert tool.metadata["tool_fields"]["arguments"] == wanted["arguments"]
    agent = next(r for r in real_records("agents.jsonl", "a2a-registry") if r["id"] == "a2a-registry:a2abench")
    read, *skills = read_registry(write_registry(tmp_path, [agent]))
    assert isinstance(read, Document)
    assert read.metadata["skill_records"] == agent["skills"]  # skill ids (to call one), tags and examples
    search = skills[0]
    assert isinstance(search, Document) and search.doc_id == "a2a-registry:a2abench/skills/search"  # its A2A id
    assert search.metadata["skill_fields"] == {key: agent["skills"][0][key] for key in ("id", "tags", "examples")}


def test_a_repeated_tool_name_is_never_renamed_onto_another_tools_name(tmp_path: Path) -> None:
    tools = [{"name": "x", "description": "first"}, {"name": "x", "description": "second"},
             {"name": "x~2", "description": "third"}]  # fmt: skip
    read = list(read_registry(write_registry(tmp_path, [{"id": "s", "name": "S", "tools": tools}])))
    docs = [item for item in read if isinstance(item, Document) and item.entity_type == "tool"]
    assert len({doc.doc_id for doc in docs}) == len(docs) == 3  # every tool kept, each under its own id
    by_id = {doc.doc_id: doc for doc in docs}
    assert by_id[tool_doc_id("s", "x~2")].metadata["tool_description"] == "third"  # a tool keeps its own name
    (server,) = [item for item in read if isinstance(item, Document) and item.entity_type == "mcp_server"]
    (renamed,) = [doc for doc in docs if doc.metadata["tool_description"] == "second"]
    key = renamed.doc_id.removeprefix(tool_doc_id("s", ""))
    assert key not in {"x", "x~2"}
    assert server.warnings == (f"tool name 'x' is repeated with other content: the repeat is {key!r}",)


def test_an_agent_card_disabled_as_the_gateway_writes_it_is_disabled(tmp_path: Path) -> None:
    # the gateway's A2A agent cards (cli/examples/*.json) spell the flag isEnabled
    card = {"name": "Code Reviewer Agent", "path": "/code-reviewer", "url": "https://example.com/agents/code-reviewer",
            "isEnabled": False, "skills": [{"id": "detect_bugs", "name": "Detect Bugs"}]}  # fmt: skip
    agent, skill = read_registry(write_registry(tmp_path, [card]))
    assert isinstance(agent, Document) and isinstance(skill, Document)
    assert agent.status == "disabled" and "isEnabled" not in agent.metadata
    assert skill.status == "disabled"  # as a disabled server's tools are


def test_a_tool_given_as_just_its_name_is_read_as_the_jsonl_source_reads_it(tmp_path: Path) -> None:
    read = list(read_registry(write_registry(tmp_path, [{"id": "s", "name": "S", "tools": ["search", "fetch"]}])))
    assert not [item for item in read if isinstance(item, Problem)]
    tools = [item for item in read if isinstance(item, Document) and item.entity_type == "tool"]
    assert [tool.doc_id for tool in tools] == [tool_doc_id("s", "search"), tool_doc_id("s", "fetch")]
