"""Registry results grouped the way a registry of MCP servers and agents shows them.

Servers (and virtual servers) come with the tools of theirs that matched the query, each with its own
score; a tool that did not match is left out even when its server did. A tool that matched brings its
server into ``servers`` even when the server itself ranked lower (its score is then its best tool's).
``tools`` lists the matching tools themselves with their server, description and input schema. Agents and
skills are listed as they ranked; an agent's skill (a document of its own, as a tool is) names its agent.
Every list holds at most ``top_n`` entries, best first.

Scores are scaled as the results' are: a candidate's fused score over the best candidate's. An entry whose
scaled score is 0 is not listed: min-max fusion gives 0 to the last of each retriever's candidates, as to a
document no retriever found (and a score below 0 is scaled to 0), so such a score tells no match from none.

A tool's description and input schema are stored on its first chunk only, so they are read for the tools an
answer shows, in one request by id (``grouped``), not with every candidate. The request also asks for each tool's
best chunk, whose record is read when there is no first chunk: an index esbridge did not write names its
documents otherwise (``t1``, not ``t1#0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from esbridge import errors
from esbridge.engines.base import AsyncEngine
from esbridge.ids import document_of, first_chunk
from esbridge.ingest.registry import (
    INPUT_SCHEMA,
    INPUT_SCHEMA_BYTES,
    MAX_ANSWER_SCHEMA_BYTES,
    OVERSIZED_INPUT_SCHEMA,
    TOOL_DESCRIPTION,
)
from esbridge.query import shaping

SERVER_TYPES = {"mcp_server": "servers", "virtual_server": "virtual_servers"}
LISTED_TYPES = {"a2a_agent": "agents", "skill": "skills"}
TOOL = "tool"
GROUP_FIELDS = (
    *(f"metadata.{key}" for key in ("server_id", "server_name", "server_path", "tool_name")),
    *(f"metadata.{key}" for key in ("agent_id", "agent_name", "agent_path")),
    "body",
)
"""Stored fields grouping reads of every candidate besides the usual ones: a tool's server, a skill's agent (a
tool indexed before its description was kept in its metadata shows the text of its best chunk)."""
RECORD_FIELDS = tuple(f"metadata.{key}" for key in (INPUT_SCHEMA, INPUT_SCHEMA_BYTES, TOOL_DESCRIPTION))
"""What is read of the first chunk (or else the best chunk) of each tool an answer shows."""


class ToolMatch(BaseModel):
    tool_name: str
    score: float
    description: str | None = None
    _chunks: tuple[str, ...] = PrivateAttr(default=())


class ServerGroup(BaseModel):
    id: str
    name: str | None = None
    path: str | None = None
    score: float = Field(description="the server's own score, or its best matching tool's when higher")
    matching_tools: list[ToolMatch] = Field(default_factory=list)


class EntityHit(BaseModel):
    id: str
    name: str | None = None
    path: str | None = None
    score: float
    agent_id: str | None = Field(default=None, description="a skill's agent, when the skill is one of its skills")
    agent_name: str | None = None


class ToolHit(BaseModel):
    server_id: str
    server_name: str | None = None
    server_path: str | None = None
    tool_name: str
    score: float
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    input_schema_bytes: int | None = Field(
        default=None,
        description=f"the size of an input schema over {MAX_ANSWER_SCHEMA_BYTES // 1024} KiB as JSON, which the "
        f"answer leaves out (the index keeps it whole: metadata.{OVERSIZED_INPUT_SCHEMA} of the tool's first chunk)",
    )
    _chunks: tuple[str, ...] = PrivateAttr(default=())
    """The chunks whose stored record it shows, the first found: its document's first chunk, its best chunk."""


class RegistryGroups(BaseModel):
    servers: list[ServerGroup] = Field(default_factory=list)
    virtual_servers: list[ServerGroup] = Field(default_factory=list)
    agents: list[EntityHit] = Field(default_factory=list)
    skills: list[EntityHit] = Field(default_factory=list)
    tools: list[ToolHit] = Field(default_factory=list)


def group(scores: Mapping[str, float], sources: Mapping[str, Mapping[str, Any]], top_n: int) -> RegistryGroups:
    """``scores`` (every candidate, fused; chunk ids) grouped by entity type; see the module docstring."""
    best: dict[str, tuple[str, float]] = {}  # document -> (its best chunk, score)
    for item, score in scores.items():
        doc = document_of(item, sources.get(item, {}))
        if doc not in best or score > best[doc][1]:
            best[doc] = (item, score)
    # Scaled as the results are (the best is 1.0, nothing below 0), so a document scores the same in both.
    scaled = dict(shaping.normalize(shaping.ranked(dict(best.values()))))
    best = {doc: (item, scaled[item]) for doc, (item, _) in best.items() if scaled[item] > 0}
    tools = [
        tool
        for doc, (item, score) in best.items()
        if sources.get(item, {}).get("entity_type") == TOOL
        and (tool := _tool(doc, item, sources[item], score)) is not None
    ]
    tools.sort(key=lambda tool: (-tool.score, tool.server_id, tool.tool_name))
    groups = RegistryGroups(tools=tools[:top_n])
    servers: dict[str, dict[str, ServerGroup]] = {name: {} for name in SERVER_TYPES.values()}
    for doc, (item, score) in best.items():
        source = sources.get(item, {})
        kind = source.get("entity_type")
        if kind in SERVER_TYPES:
            servers[SERVER_TYPES[kind]][doc] = _server(doc, source, score)
        elif kind in LISTED_TYPES:
            getattr(groups, LISTED_TYPES[kind]).append(_entity(doc, source, score))
    for tool in tools:
        parent = next((listed[tool.server_id] for listed in servers.values() if tool.server_id in listed), None)
        if parent is None:
            parent = _server(tool.server_id, {"title": tool.server_name, "path": tool.server_path}, tool.score)
            servers["servers"][tool.server_id] = parent
        match = ToolMatch(tool_name=tool.tool_name, score=tool.score, description=tool.description)
        match._chunks = tool._chunks
        parent.matching_tools.append(match)
        parent.score = max(parent.score, tool.score)
    for name, listed in servers.items():
        ranked = sorted(listed.values(), key=lambda server: (-server.score, server.id))
        setattr(groups, name, ranked[:top_n])
    for name in LISTED_TYPES.values():
        getattr(groups, name).sort(key=lambda hit: (-hit.score, hit.id))
        setattr(groups, name, getattr(groups, name)[:top_n])
    return groups


def _server(doc: str, source: Mapping[str, Any], score: float) -> ServerGroup:
    return ServerGroup(id=doc, name=_text(source.get("title")), path=_text(source.get("path")), score=score)


def _entity(doc: str, source: Mapping[str, Any], score: float) -> EntityHit:
    metadata = source.get("metadata") or {}
    return EntityHit(
        id=doc,
        name=_text(source.get("title")),
        path=_text(source.get("path")),
        score=score,
        agent_id=_text(metadata.get("agent_id")),
        agent_name=_text(metadata.get("agent_name")),
    )


def _tool(doc: str, item: str, source: Mapping[str, Any], score: float) -> ToolHit | None:
    metadata = source.get("metadata") or {}
    server_id, name = metadata.get("server_id"), metadata.get("tool_name")
    if not isinstance(server_id, str) or not isinstance(name, str):
        return None  # a tool document that did not come from a registry record: nothing to join it to
    hit = ToolHit(
        server_id=server_id,
        server_name=_text(metadata.get("server_name")),
        server_path=_text(metadata.get("server_path")),
        tool_name=name,
        score=score,
        description=_text(source.get("body")) or None,  # until its record is read
    )
    hit._chunks = (first_chunk(doc), item)
    return hit


async def grouped(
    engine: AsyncEngine,
    index: str,
    scores: Mapping[str, float],
    sources: Mapping[str, Mapping[str, Any]],
    top_n: int,
    asked: bool = True,
) -> tuple[RegistryGroups | None, str | None]:
    """``group`` when ``asked``, with each shown tool's description and input schema read from its first chunk
    (or else its best chunk); a warning when they could not be read."""
    if not asked:
        return None, None
    groups = group(scores, sources, top_n)
    shown: list[ToolHit | ToolMatch] = [*groups.tools]
    shown.extend(match for server in (*groups.servers, *groups.virtual_servers) for match in server.matching_tools)
    chunks = sorted({chunk for tool in shown for chunk in tool._chunks})
    if not chunks:
        return groups, None
    body = {"size": len(chunks), "_source": list(RECORD_FIELDS), "query": {"ids": {"values": chunks}}}
    try:
        result = await engine.search(index, body)
    except errors.EngineError as exc:
        return groups, f"grouped tools are shown without their descriptions as written and input schemas: {exc}"
    records = {hit.id: hit.source.get("metadata") or {} for hit in result.hits}
    for tool in shown:
        record = next((records[chunk] for chunk in tool._chunks if chunk in records), {})
        description = record.get(TOOL_DESCRIPTION)
        if isinstance(description, str):
            tool.description = description or None
        if isinstance(tool, ToolHit):
            schema, size = record.get(INPUT_SCHEMA), record.get(INPUT_SCHEMA_BYTES)
            tool.input_schema = schema if isinstance(schema, dict) else None
            tool.input_schema_bytes = size if isinstance(size, int) else None
    return groups, f"grouped tools: {result.partial}" if result.partial else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
