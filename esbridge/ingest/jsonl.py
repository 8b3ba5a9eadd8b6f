"""The JSON-lines source: one record per line, each becoming a ``Document`` or a ``Problem``.

A record::

    {"id": "github-mcp", "title": "GitHub MCP server", "text": "...", "links": ["git-mcp"],
     "tags": ["github"], "aliases": ["gh"], "modified_at": "2024-05-01T10:00:00Z", "created_at": 1714557600,
     "entity_type": "mcp_server", "status": "active", "category": "devtools", "metadata": {"vendor": "GitHub"},
     "tools": [{"name": "create_issue", "description": "Open an issue"}]}

Only ``id`` (a non-empty string, or an integer) is required. ``name`` stands in for a missing ``title``
and ``description`` adds a summary; ``tags`` may be one string; ``null`` means absent. Dates are ISO 8601
strings or epoch numbers (seconds, or milliseconds when above 2e10), stored as UTC (a time without zone
is taken as UTC). Fields not listed here go into ``metadata``; keys given in ``metadata`` win.

Text. The sections to chunk are, in order: ``description``; ``text``; when the record has no ``text``,
its fields as prose (``Tags: a, b`` and the flattened metadata), since an entity record such as a tool
server describes itself through fields; and ``tools`` as a section under the heading "Tools", one
``name: description`` line per tool (a tool may also be given as just its name).

Links. ``links`` (a list of ids, or of ``{"id", "weight"}`` objects) and ``link_weights`` (``{id: weight}``)
are read from the top level or from ``metadata`` (see ``esbridge.ingest.record_links``). Ids that are
records of the same file go into ``Document.links`` with their weights (deduplicated, self-links
dropped), a line that fails counting when its id can be read; the others go into
``metadata["unresolved_links"]``. Resolving needs every id, so a file in
which any record has links is read twice.

Robustness. The file is read as bytes and decoded line by line, so one invalid UTF-8 sequence spoils
one line only. A line that is not UTF-8, not JSON, not an object, holds an unpaired surrogate escape
(``"\\ud800"``), nests a field more than 100 levels deep or fails validation yields a ``Problem`` naming
the line and field; a repeated id is a ``Problem`` too (the first record wins). A Problem carries the
record's id as ``doc_id`` whenever the id itself is intact, so the ingest pipeline keeps what was indexed
for it. Blank lines are skipped. A missing or unreadable file raises ``SourceError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator, model_validator

from esbridge.errors import SourceError
from esbridge.ingest.json_values import describe_validation_error, describe_value, json_type, too_deep
from esbridge.ingest.metadata import flatten_metadata
from esbridge.ingest.model import Document, Problem, Section
from esbridge.ingest.record_links import RecordLinks, consume_links, documents_with_links, resolve_links

JsonObject = dict[str, Any]

_BOM = b"\xef\xbb\xbf"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
TOOLS_HEADING = "Tools"


# --- reading lines ------------------------------------------------------------------------------


def require_file(path: Path, what: str) -> None:
    """Raise ``SourceError`` unless ``path`` is an existing file."""
    if not path.exists():
        raise SourceError(f"{what} not found: {path}")
    if not path.is_file():
        raise SourceError(f"{what} is not a file: {path}")


def read_json_lines(path: Path, id_field: str = "id") -> Iterator[tuple[int, JsonObject] | Problem]:
    """Each non-blank line of ``path`` as ``(line number, object)``, or a ``Problem`` for that line.

    A Problem carries the record's id (from ``id_field``) as ``doc_id`` when it can still be read, so
    what was indexed for that record is kept rather than deleted.
    """
    require_file(path, "JSON-lines file")
    return _json_lines(path, id_field)


def _json_lines(path: Path, id_field: str) -> Iterator[tuple[int, JsonObject] | Problem]:
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                line = raw[len(_BOM) :] if number == 1 and raw.startswith(_BOM) else raw
                item = parse_json_line(line)
                if isinstance(item, str):
                    yield Problem(path.name, item, number, doc_id=salvage_id(line, id_field))
                elif item is not None:
                    yield number, item
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc


def parse_json_line(raw: bytes) -> JsonObject | str | None:
    """The JSON object on one line, ``None`` for a blank line, or why the line is unusable."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} of the line ({exc.reason})"
    if not line.strip():
        return None
    # Without its line ending, an error at the end of the line is located there, not on a "line 2".
    line = line.rstrip("\r\n")
    try:
        value = json.loads(line, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {json_error_location(exc)}"
    except ValueError as exc:
        return f"invalid JSON: {exc}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    if not isinstance(value, dict):
        return f"expected a JSON object, got {json_type(value)}"
    if _SURROGATE_ESCAPE.search(line):
        where = surrogate_location(value)
        if where is not None:
            return f"field {where!r}: unpaired UTF-16 surrogate escape in a string"
    return value


def json_error_location(exc: json.JSONDecodeError) -> str:
    """The decoder's reason and where on the line it arose (a line holds no newline, so only a column)."""
    # Some of json's reasons end in "at" ("Invalid control character at"), meant to precede a position.
    reason = exc.msg.removesuffix(" at")
    if exc.pos >= len(exc.doc):
        return f"{reason} at the end of the line (column {exc.colno})"
    return f"{reason} at column {exc.colno}"


def salvage_id(raw: bytes, id_field: str) -> str | None:
    """The id of a line that is no usable record, if it is still certain: bad bytes elsewhere on the
    line are replaced, but JSON that does not parse gives no id (a guess could protect the wrong record).
    """
    try:
        value = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    return known_id(value, id_field) if isinstance(value, dict) else None


def known_id(data: Mapping[str, Any], id_field: str) -> str | None:
    """``data[id_field]`` as a record id, or ``None`` when it is not a valid, cleanly decoded one."""
    try:
        found = record_id(data.get(id_field))
    except ValueError:
        return None
    return None if "\ufffd" in found or _SURROGATE.search(found) else found


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON (and the engines) do not allow.
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    # Python reads 1e999 as inf, which would be stored as the string "inf".
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text} is beyond a 64-bit float's range")
    return number


def surrogate_location(value: Any, where: str = "") -> str | None:
    """The dotted path of the first string (or key) holding a lone surrogate, if any."""
    if isinstance(value, str):
        return where if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if _SURROGATE.search(key):
                return path
            found = surrogate_location(item, path)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = surrogate_location(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


# --- validating records -------------------------------------------------------------------------


def record_id(value: Any) -> str:
    """A record id as a string: a non-empty string, or an integer (booleans are not integers)."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        raise ValueError("must not be empty")
    raise ValueError(f"must be a non-empty string or an integer, got {describe_value(value)}")


def as_utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


class Tool(BaseModel):
    """One tool of an entity such as an MCP server; fields besides these are ignored."""

    model_config = ConfigDict(extra="ignore")

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


# Far deeper than records need, far shallower than what exhausts the recursion of later stages.
MAX_NESTING = 100


class IdentifiedRecord(BaseModel):
    """A record with an ``id``, which must be unique in its file."""

    id: str

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, data: Any) -> Any:
        field = too_deep(data, MAX_NESTING)
        if field is not None:
            raise ValueError(f"field {field!r}: nested more than {MAX_NESTING} levels deep")
        return data


Record = TypeVar("Record", bound=IdentifiedRecord)


class JsonlRecord(IdentifiedRecord):
    """One line of a JSONL source; see the module docstring for the fields."""

    model_config = ConfigDict(extra="allow")

    id: str
    title: StrictStr | None = None
    name: StrictStr | None = None
    text: StrictStr | None = None
    description: StrictStr | None = None
    links: RecordLinks = RecordLinks()
    tags: list[StrictStr] = []
    aliases: list[StrictStr] = []
    created_at: datetime | None = None
    modified_at: datetime | None = None
    entity_type: StrictStr | None = None
    status: StrictStr | None = None
    category: StrictStr | None = None
    metadata: dict[str, Any] = {}
    tools: list[Tool] = []

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str:
        return record_id(value)

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
    first_line: dict[str, int] = {}
    for item in _json_lines(path, id_fields[0]):
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
            reason = f"duplicate id {record.id!r} (first on line {first_line[record.id]}); record skipped"
            yield Problem(path.name, reason, number, doc_id=record.id)
            continue
        first_line[record.id] = number
        yield record


def record_document(record: JsonlRecord, known_ids: set[str]) -> Document:
    """The ``Document`` of a valid record; links to ids outside ``known_ids`` count as unresolved."""
    metadata: JsonObject = {**(record.model_extra or {}), **record.metadata}
    if record.title and record.name:
        metadata.setdefault("name", record.name)
    title = record.title or record.name or ""
    sections = compose_sections(record, metadata)
    links = resolve_links(record.id, record.links, known_ids)
    metadata.update(links.metadata)
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
        warnings=() if title.strip() or sections else ("record has neither title nor text",),
    )


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
