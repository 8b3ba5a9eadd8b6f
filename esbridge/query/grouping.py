"""Registry results grouped the way a registry of MCP servers and agents shows them.

Servers (and virtual servers) come with the tools of theirs that matched the query, each with its own
score; a tool that did not match is left out even when its server did. A tool that matched brings its
server into ``servers`` even when the server itself ranked lower (its score is then its best tool's).
``tools`` lists the matching tools themselves with their server, description and input schema. Agents and
skills are listed as they ranked; an agent's skill (a document of its own, as a tool is) names its agent.
A skill that matched brings its agent into ``agents`` the same way.
Every list holds at most ``top_n`` entries, best first.

Each candidate is read through the index's field map (``esbridge.config.fields``): its type from the ``type``
role, its name from ``title``, and a tool's server or a skill's agent from ``parent`` (else esbridge's own
``metadata.server_id`` and ``metadata.agent_id``). A role that is not mapped is named in the answer's warnings:
without ``type`` nothing can be grouped.

Scores are scaled as the results' are: a candidate's fused score over the best candidate's. A candidate the
search did not return whose scaled score is 0 is not listed: min-max fusion gives 0 to the last of each
retriever's candidates, as to a document no retriever found (and a score below 0 is scaled to 0), so such a
score tells no match from none; nor is one scaled below the results' ``floor`` (``[pipeline.shaping] floor``),
which the results leave out. A document the search returned (``returned``) is listed whatever its score, as the
results list it: with few candidates the last of them is returned at 0.

A tool's description and input schema are stored on its first chunk only, so they are read for the tools an
answer shows, in one request by id (``grouped``), not with every candidate. The request also asks for each tool's
best chunk, whose record is read when there is no first chunk: an index esbridge did not write names its
documents otherwise (``t1``, not ``t1#0``). It has what is left of the search's time (``timeout_s``) and its own
entry in ``details.timings_ms`` (``grouping``); a failure or timeout there leaves the tools with the text of their
best chunk, with a warning, and the rest of the answer as it is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from esbridge import errors
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap, read_path
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
from esbridge.query.deadline import no_answer, with_timeout, within
from esbridge.query.timing import elapsed_ms

SERVER_TYPES = {"mcp_server": "servers", "virtual_server": "virtual_servers"}
LISTED_TYPES = {"a2a_agent": "agents", "skill": "skills"}
TOOL = "tool"
SKILL = "skill"
GROUP_FIELDS = (
    *(f"metadata.{key}" for key in ("server_id", "server_name", "server_path", "tool_name")),
    *(f"metadata.{key}" for key in ("agent_id", "agent_name", "agent_path")),
    "body",
)
"""Stored fields grouping reads of every candidate besides the usual ones: a tool's server, a skill's agent (a
tool indexed before its description was kept in its metadata shows the text of its best chunk)."""


def group_fields(fields: FieldMap) -> tuple[str, ...]:
    """The stored fields a grouped search asks for besides those the field map's other roles name."""
    return (*GROUP_FIELDS, *((fields.parent,) if fields.parent else ()))


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
    agent_path: str | None = None


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


class Grouping(BaseModel):
    """A grouped answer as it came out, with what could not be grouped and the ``ids`` request's time."""

    groups: RegistryGroups | None = None
    warnings: tuple[str, ...] = ()
    timings: dict[str, float] = Field(default_factory=dict)


def group(
    scores: Mapping[str, float],
    sources: Mapping[str, Mapping[str, Any]],
    top_n: int,
    parent: str | None = None,
    returned: Collection[str] = (),
    floor: float = 0.0,
) -> RegistryGroups:
    """``scores`` (every candidate, fused; chunk ids) grouped by entity type; see the module docstring.
    ``sources`` are read under esbridge's names (``canonical_source``); ``parent`` is the field map's;
    ``returned`` holds the chunk ids of the search's results, ``floor`` the shaping floor they were cut at."""
    return _grouped(scores, sources, top_n, parent, returned, floor)[0]


def _grouped(
    scores: Mapping[str, float],
    sources: Mapping[str, Mapping[str, Any]],
    top_n: int,
    parent: str | None,
    returned: Collection[str],
    floor: float = 0.0,
) -> tuple[RegistryGroups, int]:
    """The groups, and how many tools and skills could not be joined to their server or agent."""
    best: dict[str, tuple[str, float]] = {}  # document -> (its best chunk, score)
    for item, score in scores.items():
        doc = document_of(item, sources.get(item, {}))
        if doc not in best or score > best[doc][1]:
            best[doc] = (item, score)
    # Scaled as the results are (the best is 1.0, nothing below 0), so a document scores the same in both.
    scaled = dict(shaping.normalize(shaping.ranked(dict(best.values()))))
    shown = {document_of(item, sources.get(item, {})) for item in returned}
    best = {
        doc: (item, scaled[item])
        for doc, (item, _) in best.items()
        if (scaled[item] > 0 and scaled[item] >= floor) or doc in shown
    }
    tools: list[ToolHit] = []
    orphans = 0
    for doc, (item, score) in best.items():
        kind = sources.get(item, {}).get("entity_type")
        if kind == TOOL:
            tool = _tool(doc, item, sources[item], score, parent)
            orphans += tool is None
            tools.extend([tool] if tool is not None else [])
    tools.sort(key=lambda tool: (-tool.score, tool.server_id, tool.tool_name))
    groups = RegistryGroups(tools=tools[:top_n])
    servers: dict[str, dict[str, ServerGroup]] = {name: {} for name in SERVER_TYPES.values()}
    listed: dict[str, dict[str, EntityHit]] = {name: {} for name in LISTED_TYPES.values()}
    for doc, (item, score) in best.items():
        source = sources.get(item, {})
        kind = source.get("entity_type")
        if kind in SERVER_TYPES:
            servers[SERVER_TYPES[kind]][doc] = _server(doc, source, score)
        elif kind in LISTED_TYPES:
            listed[LISTED_TYPES[kind]][doc] = _entity(doc, source, score, parent)
            orphans += kind == SKILL and listed["skills"][doc].agent_id is None
    for tool in tools:
        server = next((found[tool.server_id] for found in servers.values() if tool.server_id in found), None)
        if server is None:
            server = _server(tool.server_id, {"title": tool.server_name, "path": tool.server_path}, tool.score)
            servers["servers"][tool.server_id] = server
        match = ToolMatch(tool_name=tool.tool_name, score=tool.score, description=tool.description)
        match._chunks = tool._chunks
        server.matching_tools.append(match)
        server.score = max(server.score, tool.score)
    agents = listed["agents"]
    for skill in listed["skills"].values():
        if skill.agent_id is None:
            continue
        agent = agents.get(skill.agent_id)
        if agent is None:  # a matched skill brings its agent in, as a tool brings its server
            agent = agents[skill.agent_id] = EntityHit(
                id=skill.agent_id, name=skill.agent_name, path=skill.agent_path, score=skill.score
            )
        agent.score = max(agent.score, skill.score)
    for name, found in servers.items():
        ranked = sorted(found.values(), key=lambda server: (-server.score, server.id))
        setattr(groups, name, ranked[:top_n])
    for name, entities in listed.items():
        setattr(groups, name, sorted(entities.values(), key=lambda hit: (-hit.score, hit.id))[:top_n])
    return groups, orphans


def unmapped(fields: FieldMap, index: str) -> tuple[str, ...]:
    """Warnings for the roles a grouped answer reads that ``fields`` does not map."""
    if fields is DEFAULT_FIELD_MAP:
        return ()
    warnings = []
    if fields.type is None:
        warnings.append(
            f"nothing could be grouped: grouping reads each result's type, and [fields.{index}] maps no type field"
        )
    if fields.title is None:
        warnings.append(f"grouped entries have no names (a tool shows its id): [fields.{index}] maps no title field")
    return tuple(warnings)


def _server(doc: str, source: Mapping[str, Any], score: float) -> ServerGroup:
    return ServerGroup(id=doc, name=_text(source.get("title")), path=_text(source.get("path")), score=score)


def _entity(doc: str, source: Mapping[str, Any], score: float, parent: str | None) -> EntityHit:
    metadata = source.get("metadata") or {}
    skill = source.get("entity_type") == SKILL
    return EntityHit(
        id=doc,
        name=_text(source.get("title")),
        path=_text(source.get("path")),
        score=score,
        agent_id=_parent_of(source, parent, "agent_id") if skill else None,
        agent_name=_text(metadata.get("agent_name")) if skill else None,
        agent_path=_text(metadata.get("agent_path")) if skill else None,
    )


def _parent_of(source: Mapping[str, Any], parent: str | None, key: str) -> str | None:
    """A tool's server or a skill's agent: the field map's ``parent`` field, else esbridge's ``metadata.<key>``."""
    value = read_path(source, parent) if parent else (source.get("metadata") or {}).get(key)
    if isinstance(value, list) and len(value) == 1:  # a keyword field holds one value or a list of them
        value = value[0]
    return value if isinstance(value, str) and value else None


def _tool(doc: str, item: str, source: Mapping[str, Any], score: float, parent: str | None) -> ToolHit | None:
    metadata = source.get("metadata") or {}
    server_id = _parent_of(source, parent, "server_id")
    if server_id is None:
        return None  # a tool whose server cannot be read: nothing to join it to
    name = next((value for value in (metadata.get("tool_name"), source.get("title")) if isinstance(value, str)), doc)
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
    *,
    fields: FieldMap = DEFAULT_FIELD_MAP,
    returned: Collection[str] = (),
    floor: float = 0.0,
    timeout_s: float,
) -> Grouping:
    """``group``, with each shown tool's description and input schema read from its first chunk (or else its best
    chunk) within ``timeout_s``; warnings for what could not be grouped or read."""
    groups, orphans = _grouped(scores, sources, top_n, fields.parent, returned, floor)
    warnings = list(unmapped(fields, index))
    if orphans:
        if fields.parent is not None:
            why = f"their {fields.parent} ([fields.{index}] parent) is empty"
        elif fields is DEFAULT_FIELD_MAP:
            why = "their metadata names no server_id or agent_id"
        else:
            why = f"their metadata names no server_id or agent_id, and [fields.{index}] maps no parent field"
        warnings.append(f"{orphans} tool(s) and skill(s) are not grouped under a server or agent: {why}")
    shown: list[ToolHit | ToolMatch] = [*groups.tools]
    shown.extend(match for server in (*groups.servers, *groups.virtual_servers) for match in server.matching_tools)
    chunks = sorted({chunk for tool in shown for chunk in tool._chunks})
    if not chunks:
        return Grouping(groups=groups, warnings=tuple(warnings))
    body = {"size": len(chunks), "_source": list(RECORD_FIELDS), "query": {"ids": {"values": chunks}}}
    unread = "grouped tools are shown without their descriptions as written and input schemas"
    started = time.perf_counter()
    try:
        if timeout_s <= 0:
            raise asyncio.TimeoutError
        async with within(timeout_s):
            result = await engine.search(index, with_timeout(body, timeout_s))
    except errors.EngineError as exc:
        warnings.append(f"{unread}: {exc}")
        return Grouping(groups=groups, warnings=tuple(warnings), timings={"grouping": elapsed_ms(started)})
    except asyncio.TimeoutError:
        warnings.append(f"{unread}: {no_answer(timeout_s)}")
        return Grouping(groups=groups, warnings=tuple(warnings), timings={"grouping": elapsed_ms(started)})
    timings = {"grouping": elapsed_ms(started)}
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
    warnings.extend([f"grouped tools: {result.partial}"] if result.partial else [])
    return Grouping(groups=groups, warnings=tuple(warnings), timings=timings)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
