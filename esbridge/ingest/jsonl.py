"""The JSON-lines source: one record per line, each becoming a ``Document`` or a ``Problem``.

A record::

    {"id": "github-mcp", "title": "GitHub MCP server", "text": "...", "links": ["git-mcp"],
     "tags": ["github"], "aliases": ["gh"], "modified_at": "2024-05-01T10:00:00Z", "created_at": 1714557600,
     "entity_type": "mcp_server", "status": "active", "category": "devtools", "metadata": {"vendor": "GitHub"},
     "tools": [{"name": "create_issue", "description": "Open an issue"}]}

Only ``id`` (a non-empty string, or an integer) is required. ``name`` stands in for a missing ``title``
and ``description`` adds a summary; ``tags`` may be one string; ``null`` means absent. Dates are ISO 8601
strings or epoch numbers (seconds, or milliseconds when above 2e10, as in ``calendar.from_epoch``), stored as
UTC (a time without zone is taken as UTC); a year (``2024``, ``"2024"``) or a year and month (``"2024-05"``) is
its first day, and one that does not exist (``"0000"``, ``"2024-13"``) fails the line, naming the field.
Fields not listed here go into ``metadata``; keys given in ``metadata`` win (with a warning naming the field
when the two values differ).

Text. The sections to chunk are, in order: ``description``; ``text``; when the record has no ``text``,
its fields as prose (``Tags: a, b`` and the flattened metadata), since an entity record such as a tool
server describes itself through fields; and ``tools`` as a section under the heading "Tools", one
``name: description`` line per tool (a tool may also be given as just its name). The tools as given, each with
every field (``inputSchema``, ...), are stored once, on the record's first chunk, as ``metadata.tool_records``.
A control character (NUL, ...) in ``title``, ``name``, ``text``, ``description``, a tag or an alias becomes a space,
with a warning naming the field and the count (``esbridge.ingest.controls``), and so does one in the text made of
the tools or the other fields (one warning); stored values (``metadata``, ``tool_records``) keep it.

Links. ``links`` (a list of ids, or of ``{"id", "weight"}`` objects) and ``link_weights`` (``{id: weight}``)
are read from the top level or from ``metadata`` (see ``esbridge.ingest.record_links``). Ids that are
records of the same file go into ``Document.links`` with their weights (deduplicated, self-links
dropped), a line that fails counting when its id can be read; the others go into
``metadata["unresolved_links"]`` (a value the record gives under that key itself is then kept as
``given_unresolved_links``, with a warning, unless it is what esbridge computes: empty once every link resolves).
Resolving needs every id, so a file in
which any record has links is read twice.

Robustness. The file is read as bytes and decoded line by line, so one invalid UTF-8 sequence spoils
one line only. A line that is not UTF-8, not JSON, not an object, holds an unpaired surrogate escape
(``"\\ud800"``), gives a key twice in one object, nests a field more than 100 levels deep or fails validation
yields a ``Problem`` naming
the line and field; a repeated id is a ``Problem`` too (the first record wins). A Problem carries the
record's id as ``doc_id`` whenever the id itself is intact, so the ingest pipeline keeps what was indexed
for it. Metadata (the record's other fields and ``metadata``) over ``MAX_METADATA_BYTES`` as JSON fails the
line, naming the record and the size, since each chunk stores a copy. Blank lines are skipped. A missing or
unreadable file raises ``SourceError``, and so does one that is gzip-compressed or UTF-16 (or UTF-32) text with
its byte order mark, once, naming it and how to convert it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from esbridge.ingest.calendar import as_utc, numeric_date, yyyymmdd_warning
from esbridge.ingest.controls import cleaned_sections, controls_warning
from esbridge.ingest.json_lines import (
    IdentifiedRecord,
    JsonObject,
    duplicate_id_reason,
    known_id,
    object_lines,
    record_id,
    require_file,
)
from esbridge.ingest.json_values import describe_validation_error, describe_value
from esbridge.ingest.metadata import flatten_metadata, with_computed
from esbridge.ingest.model import Document, Problem, Section
from esbridge.ingest.record_links import RecordLinks, consume_links, documents_with_links, resolve_links

TOOLS_HEADING = "Tools"
TEXT_FIELDS = ("title", "name", "text", "description", "tags", "aliases")
"""The fields whose control characters (NUL, ...) become spaces, with a warning (``esbridge.ingest.controls``)."""


# --- validating records -------------------------------------------------------------------------


TOOL_RECORDS = "tool_records"
"""The metadata key of a record's tools as given (every field of each), stored on its first chunk only."""


class Tool(BaseModel):
    """One tool of an entity such as an MCP server; its other fields (``inputSchema``) are kept in ``TOOL_RECORDS``."""

    model_config = ConfigDict(extra="allow")

    name: StrictStr = Field(min_length=1)
    description: StrictStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @property
    def line(self) -> str:
        return named_line(self.name, self.description)


def named_line(name: str, description: str | None) -> str:
    """``name: description`` on one line (the description's whitespace collapsed), or the name alone."""
    text = " ".join((description or "").split())
    return f"{name}: {text}" if text else name


# What a record may store as metadata (its other fields and ``metadata``), serialized as JSON: each of its
# chunks stores a copy. As a note's frontmatter metadata (``frontmatter.MAX_METADATA_BYTES``).
MAX_METADATA_BYTES = 64 * 1024


Record = TypeVar("Record", bound=IdentifiedRecord)


class JsonlRecord(IdentifiedRecord):
    """One line of a JSONL source; see the module docstring for the fields."""

    model_config = ConfigDict(extra="allow")
    CLEANED_FIELDS = TEXT_FIELDS

    id: str
    title: StrictStr | None = None
    name: StrictStr | None = None
    text: StrictStr | None = None
    description: StrictStr | None = None
    links: RecordLinks = RecordLinks()
    tags: list[StrictStr] = Field(default_factory=list)
    aliases: list[StrictStr] = Field(default_factory=list)
    created_at: datetime | None = None
    modified_at: datetime | None = None
    entity_type: StrictStr | None = None
    status: StrictStr | None = None
    category: StrictStr | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: list[Tool] = Field(default_factory=list)
    _date_warnings: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _yyyymmdd(cls, data: Any, handler: ModelWrapValidatorHandler[JsonlRecord]) -> JsonlRecord:
        record = handler(data)
        if isinstance(data, dict):
            found = (
                yyyymmdd_warning(f"field {key!r}", data.get(key), getattr(record, key))
                for key in ("created_at", "modified_at")
            )
            record._date_warnings = tuple(warning for warning in found if warning)
        return record

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str:
        return record_id(value)

    @model_validator(mode="after")
    def _metadata_size(self) -> JsonlRecord:
        check_metadata_size(self.id, self.model_extra or {}, self.metadata)
        return self

    @model_validator(mode="before")
    @classmethod
    def _links(cls, data: Any) -> Any:
        return consume_links(data)

    @model_validator(mode="before")
    @classmethod
    def _beir_line(cls, data: Any) -> Any:
        if isinstance(data, dict) and "id" not in data and "_id" in data:
            raise ValueError(
                "field 'id' is missing; the record has '_id', as a line of a BEIR corpus does: ingest the BEIR "
                "folder (the one holding corpus.jsonl), or name the field 'id'"
            )
        return data

    @field_validator("tags", "aliases", mode="before")
    @classmethod
    def _string_list(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

    @field_validator("tools", mode="before")
    @classmethod
    def _tools(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("created_at", "modified_at", mode="before")
    @classmethod
    def _numeric_date(cls, value: Any) -> Any:
        return numeric_date(value)

    @field_validator("created_at", "modified_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


# --- building documents -------------------------------------------------------------------------


def read_jsonl(path: Path) -> Iterator[Document | Problem]:
    """Every record of the JSONL file ``path`` as a ``Document``, or a ``Problem`` naming the line and why."""
    require_file(path, "JSON-lines file")
    return _documents(path)


def _documents(path: Path) -> Iterator[Document | Problem]:
    return documents_with_links(lambda: _records(path), record_document)


def _records(path: Path) -> Iterator[JsonlRecord | Problem]:
    return unique_records(path, JsonlRecord, id_fields=("id",))


def unique_records(path: Path, model: type[Record], *, id_fields: Sequence[str]) -> Iterator[Record | Problem]:
    """Every line of ``path`` validated as ``model``; a line that fails, or repeats an earlier id, is a
    ``Problem`` naming the line (and, when it can be read, the record's id from the first of ``id_fields``)."""
    for item in numbered_records(path, model, id_fields=id_fields):
        yield item if isinstance(item, Problem) else item[1]


def numbered_records(
    path: Path, model: type[Record], *, id_fields: Sequence[str]
) -> Iterator[tuple[int, Record] | Problem]:
    """``unique_records`` with each record's line number."""
    first_line: dict[str, tuple[int, str]] = {}  # id -> the line that first gave it, and the field it was read from
    for item in object_lines(path, id_fields[0]):
        if isinstance(item, Problem):
            yield item
            continue
        number, data = item
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            doc_id = next((found for name in id_fields if (found := known_id(data, name))), None)
            yield Problem(path.name, describe_validation_error(exc), number, doc_id=doc_id)
            continue
        if record.id in first_line:
            reason = duplicate_id_reason(record, *first_line[record.id])
            yield Problem(path.name, reason, number, doc_id=record.id)
            continue
        first_line[record.id] = number, record.id_field
        yield number, record


def record_document(record: JsonlRecord, known_ids: set[str]) -> Document:
    """The ``Document`` of a valid record; links to ids outside ``known_ids`` count as unresolved."""
    metadata, overridden = merged_metadata(record.model_extra or {}, record.metadata)
    if record.title and record.name:
        # After metadata's own keys, where it has always been: a record without text is chunked from its
        # metadata in this order, so moving it would change every such chunk's hash (all re-embedded).
        overridden += merged_metadata({"name": record.name}, record.metadata)[1]
        metadata.setdefault("name", record.name)
    title = record.title or record.name or ""
    # The text fields are clean already; what else becomes text (tools, fields written out) is cleaned here.
    sections, controls = cleaned_sections(compose_sections(record, metadata))
    links = resolve_links(record.id, record.links, known_ids)
    computed = {**links.computed_over(metadata), **_tool_records(record.tools)}
    metadata, replaced = with_computed(metadata, computed, unit="record")
    return Document(
        doc_id=record.id,
        title=title,
        sections=sections,
        tags=distinct(record.tags),
        aliases=distinct(record.aliases),
        links=links.links,
        link_weights=links.weights,
        entity_type=record.entity_type,
        status=record.status,
        category=record.category,
        created_at=record.created_at,
        modified_at=record.modified_at,
        metadata=metadata,
        warnings=(
            *record.id_warnings,
            *overridden,
            *replaced,
            *record._date_warnings,
            *record.control_warnings,
            *([controls_warning(controls, "the text made of its tools or other fields")] if controls else []),
            *links.warnings,
            *(() if title.strip() or sections else ("record has neither title nor text",)),
        ),
        first_chunk_only=frozenset({TOOL_RECORDS}),
    )


def _tool_records(tools: Sequence[Tool]) -> dict[str, Any]:
    """The tools as given: their text holds only names and descriptions, with its whitespace collapsed."""
    return {TOOL_RECORDS: [tool.model_dump(exclude_unset=True) for tool in tools]} if tools else {}


def check_metadata_size(record: str, fields: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
    """Refuse (ValueError) a record whose metadata (``merged_metadata``) is over ``MAX_METADATA_BYTES`` as JSON."""
    merged, _ = merged_metadata(fields, metadata)
    size = len(json.dumps(merged, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            f"record {record!r}: metadata (its fields that are not record fields, and 'metadata') is "
            f"{size / 1024:.1f} KiB as JSON, over the {MAX_METADATA_BYTES / 1024:.0f} KiB a record may store "
            "(each of its chunks stores a copy); record skipped"
        )


def merged_metadata(fields: Mapping[str, Any], metadata: Mapping[str, Any]) -> tuple[JsonObject, tuple[str, ...]]:
    """A record's other fields and its ``metadata`` as one mapping, ``metadata`` winning, and a warning for
    each field whose different value it replaces: that value is not stored, which should not go unnoticed."""
    warnings = tuple(
        f"field {key!r} is given at the top level ({describe_value(value)}) and in metadata "
        f"({describe_value(metadata[key])}); the value in metadata is kept, the other is not indexed"
        for key, value in fields.items()
        if key in metadata and metadata[key] != value
    )
    return {**fields, **metadata}, warnings


def compose_sections(record: JsonlRecord, metadata: Mapping[str, Any]) -> tuple[Section, ...]:
    """The record's text as sections, in the order the module docstring gives."""
    sections: list[Section] = []
    for prose in (record.description, record.text):
        if prose and prose.strip():
            sections.append(Section(prose.strip()))
    if not (record.text and record.text.strip()):
        fields = entity_fields_text(record.tags, metadata)
        if fields:
            sections.append(Section(fields))
    if record.tools:
        sections.append(Section("\n".join(tool.line for tool in record.tools), headings=(TOOLS_HEADING,)))
    return tuple(sections)


def entity_fields_text(tags: Sequence[str], metadata: Mapping[str, Any]) -> str:
    """``Tags: a, b`` and the flattened metadata, as lines."""
    lines = [f"Tags: {', '.join(distinct(tags))}"] if tags else []
    flattened = flatten_metadata(metadata)
    if flattened:
        lines.append(flattened)
    return "\n".join(lines)


def distinct(values: Sequence[str]) -> tuple[str, ...]:
    """Stripped, non-empty values without repeats, in order."""
    return tuple(dict.fromkeys(value.strip() for value in values if value.strip()))
