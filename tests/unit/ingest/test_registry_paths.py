"""A tool or skill document has no path of its own: its server's (or agent's) path stays in its metadata, and a
query word in that path no longer gives every tool of the server the same BM25 score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest import registry
from esbridge.ingest.model import Document
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.bodies import bm25_body
from esbridge.query.models import Filters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry

TIME_TOOLS = [
    {"name": "current_time", "description": "Get the current date and time in a timezone"},
    {"name": "days_in_month", "description": "Get the number of days in a month"},
    {"name": "get_week_year", "description": "Get the week of the year of a date"},
]
SERVERS: list[dict[str, Any]] = [
    {"id": "time", "name": "Clock", "path": "/time-mcp", "tools": TIME_TOOLS},
    {"id": "weather", "name": "Weather", "path": "/weather", "tools": [{"name": "forecast", "description": "Rain"}]},
    *({"id": f"s{n}", "name": f"Server {n}", "path": f"/s{n}", "tools": ["a", "b", "c"]} for n in range(4)),
]
AGENT = {"id": "travel", "name": "Travel", "path": "/travel", "skills": [{"id": "book", "name": "Book"}]}


def load(engine: EmbeddedEngine, path: Path) -> Any:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    report = ingest(path, engine=engine, manager=manager, embedder=embedder,
                    options=IngestOptions(source_format="registry", source="registry"))  # fmt: skip
    engine.refresh("registry")
    return report


def stored(engine: EmbeddedEngine) -> dict[str, Mapping[str, Any]]:
    return {hit.source["doc_id"]: hit.source for hit in engine.search("registry", {"size": 100}).hits}


def test_a_tool_and_a_skill_keep_their_parents_path_in_metadata_not_as_their_path(tmp_path: Path) -> None:
    read = {doc.doc_id: doc for doc in registry.read_registry(write_registry(tmp_path, [SERVERS[0], AGENT]))}
    server, tool = read["time"], read["time/tools/current_time"]
    agent, skill = read["travel"], read["travel/skills/book"]
    assert isinstance(server, Document) and isinstance(tool, Document)
    assert isinstance(agent, Document) and isinstance(skill, Document)
    assert (server.path, tool.path, tool.metadata["server_path"]) == ("/time-mcp", None, "/time-mcp")
    assert (agent.path, skill.path, skill.metadata["agent_path"]) == ("/travel", None, "/travel")


def test_a_query_word_in_a_servers_path_scores_the_server_not_its_tools(engine: EmbeddedEngine, tmp_path: Path) -> None:
    load(engine, write_registry(tmp_path, SERVERS))
    body = bm25_body("opensearch", "what time is it", size=10, filters=Filters())
    _, exact = body["query"]["bool"]["should"]
    path_only = {**body, "query": {"bool": {**body["query"]["bool"], "should": [exact]}}}
    matched = {hit.source["doc_id"]: hit.score for hit in engine.search("registry", path_only).hits}
    assert set(matched) == {"time"}  # the path clause (path.text^2, best_fields): the server, none of its tools
    scores = {hit.source["doc_id"]: hit.score for hit in engine.search("registry", body).hits}
    tools = [score for doc, score in scores.items() if doc.startswith("time/tools/")]
    assert tools and max(tools) < scores["time"]


def test_a_reingest_over_tools_stored_with_their_servers_path_rewrites_them_in_place(
    engine: EmbeddedEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = registry.tool_document
    # An index written when a tool's path was its server's.
    monkeypatch.setattr(registry, "tool_document", lambda server, key, tool: replace(
        made(server, key, tool), path=server.path))  # fmt: skip
    load(engine, write_registry(tmp_path, SERVERS))
    before = stored(engine)
    monkeypatch.undo()
    # 16 of its 22 documents change: more than the share an ingest may delete, but none is deleted
    report = load(engine, write_registry(tmp_path, SERVERS))
    after = stored(engine)
    assert before["time/tools/days_in_month"]["path"] == "/time-mcp" and len(before) == 22
    assert set(after) == set(before)
    assert (report.failed, report.deleted, report.chunks_indexed) == ([], 0, 16)
    assert after["time/tools/days_in_month"].get("path") is None
    assert after["time/tools/days_in_month"]["metadata"]["server_path"] == "/time-mcp"
    assert after["time"]["path"] == "/time-mcp"
    again = load(engine, write_registry(tmp_path, SERVERS))  # converged: nothing to write or delete
    assert (again.chunks_indexed, again.deleted) == (0, 0)
