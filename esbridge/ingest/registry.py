"""The registry source: MCP servers, virtual servers, A2A agents and skills, each tool and skill its own document.

One JSON object per line (``esbridge ingest --format registry``)::

    {"id": "atlassian", "entity_type": "mcp_server", "name": "Atlassian", "path": "/atlassian",
     "description": "...", "tags": ["jira"], "is_enabled": true, "metadata": {"vendor": "Atlassian"},
     "tools": [{"name": "create_issue", "description": "...", "inputSchema": {...}}]}

A tool or skill may also be given as just its name (``"tools": ["search"]``), as in the JSONL source.

``entity_type`` is one of ``mcp_server``, ``virtual_server``, ``a2a_agent`` and ``skill``; without it, a record
with ``skills`` is an ``a2a_agent`` and any other an ``mcp_server``. ``id`` defaults to ``path`` (the path is then
stored stripped, as the id is).

What is embedded follows what an MCP gateway registry embeds: the name, the description, ``Tags: ...``, the
metadata as text (each key a token, scalars and list items as strings), and the names and descriptions of
the tools or skills. The path, the input schemas and the record's other fields (``source``, ``repository``,
...) are stored, not embedded. So are a tool's other fields (``tool_fields``: Docker's ``arguments``, the
gateway's ``parsed_description``) and an agent's skills as given (``skill_records``: ids, tags, examples);
like the input schemas, these two are not in the text BM25 matches.

Tools. Each tool becomes a document of its own (``entity_type`` ``tool``, id ``<server id>/tools/<name>``),
linked to its server and carrying ``server_id``, ``server_name``, ``server_path``, ``tool_name``, the
``input_schema`` and ``tool_description`` (the description as written, which grouped answers show),
so a tool can match and be scored on its own on every engine. A tool has no ``path`` of its own: with its
server's, BM25's boosted path clause gave every tool of a server whose path holds a query word the same large
score (``server_path`` keeps it; docs/registries.md). The tool's record (``TOOL_RECORD_KEYS``) is stored
on its first chunk only, whole and once; a schema over ``MAX_ANSWER_SCHEMA_BYTES`` is kept under
``oversized_input_schema``, which searches do not read, with a warning naming the tool. Its text is its name and
description only:
adding its server's name and description lowered tool recall@10 on the development tasks (0.7976 to
0.7440, docs/registries.md).

Skills. An agent's skill becomes a document the same way (``entity_type`` ``skill``, id
``<agent id>/skills/<key>``: the skill's A2A ``id``, stable across renames, else its name), linked to its agent and
carrying ``agent_id``, ``agent_name``, ``agent_path`` (and no ``path`` of its own, as a tool),
``skill_name``, and on its first chunk ``skill_description`` (as written) and ``skill_fields`` (its id, tags,
examples): its name and description are its text, its tags its own (its agent's when it has none). Grouped answers
list it under ``skills`` with its agent. A tool or skill name, a skill id or a record id with spaces at either end is
stripped (it makes a document id), with a warning on its record. A skill document once named by its name
``replaces`` that id: a re-ingest deletes it without counting it as a deletion.

Control characters. As in a JSONL record, a control character (NUL, ...) in a record's ``name``, ``description``
or tags becomes a space, with a warning per field, and so does one in the text made of its tools, skills or other
fields (one warning); a tool's or skill's ``description`` and a skill's tags (and a skill's name, when its ``id``
makes the document id) the same way, with the warning on that tool's or skill's document. Stored values
(``metadata``, ``tool_description``, ``skill_description``, ``skill_records``, ``skill_fields``) keep the character.
What makes a document id (a record's id or the ``path`` standing in for it, a tool name, a skill id, else the skill's
name) is refused instead, its line a ``Problem``, when it holds a character ``esbridge.ids.refused_character``
refuses.

Lifecycle. ``is_enabled: false`` (or ``isEnabled``, as the gateway's agent cards write it) gives the record (and its
tools and skills) the status ``disabled``, which searches leave out unless asked (``include_disabled``); a record's own
``status`` (``deprecated``) is kept. ``is_enabled: null`` counts as absent (enabled), as null ``tags``, ``tools``,
``skills`` and ``metadata`` count as absent.

Problems. A line that fails (``tools`` not a list, a schema not an object, no name, a blank record, tool or skill
name, neither ``id`` nor ``path``, metadata over 64 KiB as JSON, as a JSONL record's is refused) is
a ``Problem`` naming the line and field; the other records are read. So is
a record that would make a document id an earlier line made (a record whose id is ``<server id>/tools/<name>`` of
another's tool): the error names both lines. A field esbridge computes (``tool_count``, ``skill_records``) that
the record gives itself is kept as ``given_<field>``, with a warning. When its id can be read, what the index
holds for that record, its tools and skills included, is kept until the line is fixed. When it cannot, a record
read whole still loses the tools and skills it no longer lists, as it does when every line reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from esbridge.ids import first_chunk
from esbridge.ingest.controls import (
    cleaned_sections,
    controls_warning,
    counted_fields,
    without_controls,
    without_controls_each,
)
from esbridge.ingest.json_lines import require_file
from esbridge.ingest.jsonl import distinct, entity_fields_text, merged_metadata, numbered_records
from esbridge.ingest.metadata import with_computed
from esbridge.ingest.model import Document, Problem, Section
from esbridge.ingest.registry_records import RegistryRecord, RegistrySkill, RegistryTool

TOOL = "tool"
TOOLS_HEADING = "Tools"
SKILLS_HEADING = "Skills"
TOOL_FIELDS = "tool_fields"
"""The metadata key of a tool's fields besides name, description and inputSchema (Docker's ``arguments``)."""
TOOL_DESCRIPTION = "tool_description"
"""The metadata key of a tool's description as written: its text is whitespace-normalized and may be cut into chunks."""
SKILL_RECORDS = "skill_records"
"""The metadata key of an agent's skills as given (ids, tags, examples); their names and descriptions are embedded."""
INPUT_SCHEMA = "input_schema"
OVERSIZED_INPUT_SCHEMA = "oversized_input_schema"
INPUT_SCHEMA_BYTES = "input_schema_bytes"
MAX_ANSWER_SCHEMA_BYTES = 64 * 1024
"""The largest input schema (UTF-8 JSON) a grouped search answer carries. A larger one is stored whole under
``OVERSIZED_INPUT_SCHEMA``, which searches do not read, with its size in ``INPUT_SCHEMA_BYTES``, which answers give."""
TOOL_RECORD_KEYS = frozenset({INPUT_SCHEMA, OVERSIZED_INPUT_SCHEMA, INPUT_SCHEMA_BYTES, TOOL_FIELDS, TOOL_DESCRIPTION})
SKILL = "skill"
SKILL_FIELDS = "skill_fields"
"""The metadata key of a skill's fields besides name and description (its id, tags, examples)."""
SKILL_DESCRIPTION = "skill_description"
SKILL_RECORD_KEYS = frozenset({SKILL_FIELDS, SKILL_DESCRIPTION})
"""A skill's metadata kept on its first chunk only."""
Named = TypeVar("Named", RegistryTool, RegistrySkill)
"""A tool's metadata kept on its first chunk only: the record whole, once."""


def tool_doc_id(server_id: str, tool: str) -> str:
    return f"{server_id}/tools/{tool}"


def skill_doc_id(agent_id: str, skill: str) -> str:
    """The document id of a skill: ``skill`` is its A2A id, or its name when it has none."""
    return f"{agent_id}/skills/{skill}"


def owned_prefixes(record_id: str) -> tuple[str, ...]:
    """What the ids of a record's tools and skills start with."""
    return tool_doc_id(record_id, ""), skill_doc_id(record_id, "")


def read_registry(path: Path) -> Iterator[Document | Problem]:
    """Every record of the registry file ``path`` as its documents, or a ``Problem`` naming the line and why."""
    require_file(path, "registry JSON-lines file")
    return _documents(path)


def _documents(path: Path) -> Iterator[Document | Problem]:
    made_by: dict[str, str] = {}  # document id -> what made it, for the error of a record that makes it again
    for item in numbered_records(path, RegistryRecord, id_fields=("id", "path")):
        if isinstance(item, Problem):
            # A record that cannot be read keeps its tools in the index as well as itself.
            yield item if item.doc_id is None else replace(item, doc_prefixes=owned_prefixes(item.doc_id))
            continue
        number, record = item
        documents = record_documents(record)
        taken = next((doc.doc_id for doc in documents if doc.doc_id in made_by), None)
        if taken is not None:
            shown = f"{taken!r} ({record.stand_in})" if taken == record.id and record.stand_in else repr(taken)
            reason = f"document id {shown} is already {made_by[taken]}; record skipped (change one of the ids)"
            yield Problem(path.name, reason, number, doc_id=record.id, doc_prefixes=owned_prefixes(record.id))
            continue
        line = f"line {number}, from its {record.id_field!r}" if record.stand_in else f"line {number}"
        for doc in documents:
            made_by[doc.doc_id] = (
                f"the id of record {record.id!r} ({line})"
                if doc.doc_id == record.id
                else f"the id of {doc.entity_type} {doc.title!r} of record {record.id!r} ({line})"
            )
        yield from documents


def record_documents(record: RegistryRecord) -> list[Document]:
    """The entity's document, then one per tool, then one per skill.

    A tool or skill name the record repeats keeps every distinct one: the second is ``<name>~2`` (and so on),
    and an exact repeat is dropped; a name with spaces at either end is stripped; the entity's warnings say which.
    """
    given, overridden = merged_metadata(record.model_extra or {}, record.metadata)
    computed: dict[str, Any] = {}
    if record.tools:
        computed["tool_count"] = len(record.tools)
    if record.skills:
        computed[SKILL_RECORDS] = [skill.model_dump(exclude_unset=True) for skill in record.skills]
    stored, replaced = with_computed(given, computed, unit="record")
    tools, tool_warnings = _distinct(record.tools, TOOL)
    skills, skill_warnings = _distinct(record.skills, SKILL)
    sections, control_warnings = entity_sections(record)
    entity = Document(
        doc_id=record.id,
        title=without_controls(record.name)[0],
        sections=sections,
        path=record.path,
        tags=distinct(record.tags),
        entity_type=record.entity_type,
        status=record.lifecycle_status,
        category=record.category,
        metadata=stored,
        warnings=(
            *record.id_warnings,
            *overridden,
            *replaced,
            *control_warnings,
            *record.control_warnings,
            *tool_warnings,
            *skill_warnings,
        ),
        doc_prefixes=owned_prefixes(record.id),
        first_chunk_only=frozenset({SKILL_RECORDS}),
    )
    return [
        entity,
        *(tool_document(record, key, tool) for key, tool in tools),
        *(skill_document(record, key, skill) for key, skill in skills),
    ]


def _distinct(items: Sequence[Named], kind: str) -> tuple[list[tuple[str, Named]], tuple[str, ...]]:
    kept: list[tuple[str, Named]] = []
    seen: dict[str, list[Named]] = {}
    taken = {item.key for item in items}  # a repeat's key must not be the key of another one ("x~2")
    warnings: list[str] = []
    for item in items:
        if item.given_name is not None:
            warnings.append(f"{kind} name {item.given_name!r} has spaces at either end: stored as {item.name!r}")
        if isinstance(item, RegistrySkill) and item.given_id is not None:
            warnings.append(f"{kind} id {item.given_id!r} has spaces at either end: stored as {item.id!r}")
        same_key = seen.setdefault(item.key, [])
        if any(earlier.same_as(item) for earlier in same_key):
            warnings.append(f"{kind} {item.name!r} is listed twice, identically: kept once")
            continue
        same_key.append(item)
        key, count = item.key, len(same_key)
        if count > 1:
            while (key := f"{item.key}~{count}") in taken:
                count += 1
            taken.add(key)
        if key != item.key:
            by = "id" if isinstance(item, RegistrySkill) and item.id is not None else "name"
            warnings.append(f"{kind} {by} {item.key!r} is repeated with other content: the repeat is {key!r}")
        kept.append((key, item))
    return kept, tuple(warnings)


def entity_sections(record: RegistryRecord) -> tuple[tuple[Section, ...], list[str]]:
    """The entity's sections, their control characters replaced by spaces, and the warnings saying how many were:
    one per field (``name``, ``description``), one for the text made of its tools, skills or other fields."""
    sections: list[Section] = []
    fields = entity_fields_text(record.tags, record.metadata)
    if fields:
        sections.append(Section(fields))
    if record.tools:
        sections.append(Section("\n".join(tool.line for tool in record.tools), headings=(TOOLS_HEADING,)))
    if record.skills:
        sections.append(Section("\n".join(skill.line for skill in record.skills), headings=(SKILLS_HEADING,)))
    composed, controls = cleaned_sections(sections)
    description, described = without_controls(record.description or "")
    warnings = counted_fields((("name", without_controls(record.name)[1]), ("description", described)))
    if controls:
        warnings.append(controls_warning(controls, "the text made of its tools, skills or other fields"))
    return ((Section(description.strip()),) if description.strip() else ()) + composed, warnings


def tool_document(server: RegistryRecord, key: str, tool: RegistryTool) -> Document:
    """A tool as a document of its own (id ``<server id>/tools/<key>``): its name and description embedded,
    its schema stored."""
    text, controls = without_controls(tool.description or "")
    description = " ".join(text.split())
    metadata: dict[str, Any] = {
        "server_id": server.id,
        "server_name": without_controls(server.name)[0],
        "server_path": server.path,
        "tool_name": tool.name,
    }
    if tool.description is not None:
        metadata[TOOL_DESCRIPTION] = tool.description
    doc_id = tool_doc_id(server.id, key)
    warnings = counted_fields((("description", controls),))
    if tool.input_schema is not None:
        size = len(json.dumps(tool.input_schema, ensure_ascii=False).encode("utf-8"))
        if size > MAX_ANSWER_SCHEMA_BYTES:
            metadata[OVERSIZED_INPUT_SCHEMA], metadata[INPUT_SCHEMA_BYTES] = tool.input_schema, size
            warnings.append(
                f"tool {tool.name!r}: its input schema is {size / 1024:.1f} KiB as JSON, over the "
                f"{MAX_ANSWER_SCHEMA_BYTES // 1024} KiB a search answer carries; it is stored whole, once, as "
                f"metadata.{OVERSIZED_INPUT_SCHEMA} of chunk {first_chunk(doc_id)!r} (esbridge export writes it), "
                f"and grouped answers give its size ({INPUT_SCHEMA_BYTES}) instead"
            )
        else:
            metadata[INPUT_SCHEMA] = tool.input_schema
    if tool.model_extra:
        metadata[TOOL_FIELDS] = dict(tool.model_extra)
    return Document(
        doc_id=doc_id,
        title=tool.name,
        sections=(Section(description),) if description else (),
        tags=distinct(server.tags),
        links=(server.id,),
        entity_type=TOOL,
        status=server.lifecycle_status,
        category=server.category,
        metadata=metadata,
        warnings=tuple(warnings),
        first_chunk_only=TOOL_RECORD_KEYS,
    )


def skill_document(agent: RegistryRecord, key: str, skill: RegistrySkill) -> Document:
    """An agent's skill as a document of its own (id ``<agent id>/skills/<key>``), as a tool is: its name and
    description embedded, its other fields stored."""
    text, controls = without_controls(skill.description or "")
    description = " ".join(text.split())
    name, named = without_controls(skill.name)  # a name that makes the id holds none: it is refused
    tags, tagged = without_controls_each(skill.tags)  # its agent's are clean already
    metadata: dict[str, Any] = {
        "agent_id": agent.id,
        "agent_name": without_controls(agent.name)[0],
        "agent_path": agent.path,
        "skill_name": name,
    }
    if skill.description is not None:
        metadata[SKILL_DESCRIPTION] = skill.description
    fields = skill.model_dump(exclude_unset=True, exclude={"name", "description"})
    if fields:
        metadata[SKILL_FIELDS] = fields
    return Document(
        doc_id=skill_doc_id(agent.id, key),
        # Before skills were keyed by their A2A id, their documents were named by the skill's name.
        replaces=(skill_doc_id(agent.id, skill.name),) if skill.id is not None and skill.id != skill.name else (),
        title=name,
        sections=(Section(description),) if description else (),
        tags=distinct(tags or agent.tags),
        links=(agent.id,),
        entity_type=SKILL,
        status=agent.lifecycle_status,
        category=agent.category,
        metadata=metadata,
        warnings=tuple(counted_fields((("name", named), ("description", controls), ("tags", tagged)))),
        first_chunk_only=SKILL_RECORD_KEYS,
    )
