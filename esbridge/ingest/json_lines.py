"""Reading a JSON-lines file: bytes decoded line by line, each line a JSON object or a ``Problem`` naming it.

Lines end at ``\n``, ``\r\n`` or ``\r`` (``esbridge.line_ends``), read a block at a time.
A UTF-8 byte order mark at the start of any line (files joined with ``cat``) is dropped, as on the first.
One invalid UTF-8 sequence, a line that is not JSON or not an object, an unpaired surrogate escape, a
number beyond a float's range or a key given twice in one object spoils that line only; a record's id is
salvaged from a line that fails when it can be, so the ingest keeps what was indexed for it. A whole file
that cannot be read line by line (gzip-compressed, or UTF-16 or UTF-32 text with its byte order mark) is
refused once, naming what it is.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ModelWrapValidatorHandler, PrivateAttr, model_validator

from esbridge.errors import SourceError
from esbridge.ids import refused_character, shown_path
from esbridge.ingest.controls import cleaned_fields
from esbridge.ingest.json_values import describe_value, json_type, refuse_too_deep
from esbridge.ingest.model import Problem
from esbridge.line_ends import byte_lines

JsonObject = dict[str, Any]

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
# UTF-32's marks first: UTF-32LE's begins with UTF-16LE's.
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def require_file(path: Path, what: str, *, keep_name: bool = False) -> None:
    """Raise ``SourceError`` unless ``path`` is an existing file, readable, not gzip-compressed and not UTF-16 or
    UTF-32 text (told by their byte order marks). ``keep_name``: the command the error gives converts the file in
    place, for a file read by its name (a BEIR folder's ``corpus.jsonl``)."""
    if not path.exists():
        raise SourceError(f"{what} not found: {shown_path(path)}")
    if not path.is_file():
        raise SourceError(f"{what} is not a file: {shown_path(path)}")
    try:
        with path.open("rb") as probe:
            head = probe.read(4)
    except OSError as exc:
        raise SourceError(f"cannot read {shown_path(path)}: {exc.strerror or exc}") from exc
    target = path.with_name(f"{path.name}.utf8") if keep_name else _converted_name(path)
    shown, converted = (shlex.quote(shown_path(name)) for name in (path, target))
    then = f" && mv {converted} {shown}" if keep_name else ""
    if head.startswith(_GZIP_MAGIC):  # read as text, each of its lines would fail as "invalid UTF-8", unnamed
        raise SourceError(
            f"{what} {shown_path(path)} is gzip-compressed: decompress it first (gunzip -c {shown} > {converted}{then})"
        )
    encoding = next((name for mark, name in _WIDE_BOMS if head.startswith(mark)), None)
    if encoding is not None:  # as for gzip: one error per line, and the encoding never named
        raise SourceError(
            f"{what} {shown_path(path)} is {encoding} text (it begins with a {encoding} byte order mark), not UTF-8: "
            f"convert it first (iconv -f {encoding} -t UTF-8 {shown} > {converted}{then})"
        )


def _converted_name(path: Path) -> Path:
    """Where a hint puts the file made readable: beside it, named so that ingest reads it as JSON lines."""
    stem = path.name.removesuffix(".gz").removesuffix(".gzip")
    base, dot, suffix = stem.rpartition(".")
    if dot and f".{suffix.lower()}" in (".jsonl", ".ndjson"):
        stem = base
    return path.with_name(f"{stem}.utf8.jsonl")


def read_json_lines(path: Path, id_field: str = "id") -> Iterator[tuple[int, JsonObject] | Problem]:
    """Each non-blank line of ``path`` as ``(line number, object)``, or a ``Problem`` for that line.

    A Problem carries the record's id (from ``id_field``) as ``doc_id`` when it can still be read, so
    what was indexed for that record is kept rather than deleted.
    """
    require_file(path, "JSON-lines file")
    return object_lines(path, id_field)


def object_lines(path: Path, id_field: str) -> Iterator[tuple[int, JsonObject] | Problem]:
    """``read_json_lines`` once the caller has checked that the file exists."""
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(byte_lines(handle), start=1):
                # Not only the first line: files joined with cat keep each file's mark at the start of a line.
                line = raw.removeprefix(_BOM)
                item = parse_json_line(line)
                if isinstance(item, str):
                    yield Problem(path.name, item, number, doc_id=salvage_id(line, id_field))
                elif item is not None:
                    yield number, item
    except OSError as exc:
        raise SourceError(f"cannot read {shown_path(path)}: {exc.strerror or exc}") from exc


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
        value = json.loads(
            line, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
        )
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


class NotJsonValue(ValueError):
    """JSON that Python's json reads and esbridge refuses: NaN, Infinity, a number beyond a float's range (which
    JSON does not have), a key given twice in one object (whose first value Python drops)."""


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` refusing ``NotJsonValue``s, as a JSONL line is read: the same record reads the same anywhere."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> JsonObject:
    # Python keeps the later of two values of a key without a word; both clusters refuse such a document.
    found = dict(pairs)
    if len(found) != len(pairs):
        twice = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise NotJsonValue(f"the key {twice!r} is given twice in one object, so one of its values would be lost")
    return found


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON (and the engines) do not allow.
    raise NotJsonValue(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    # Python reads 1e999 as inf, which would be stored as the string "inf".
    number = float(text)
    if not math.isfinite(number):
        raise NotJsonValue(f"the number {text} is beyond a 64-bit float's range")
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


def id_field(data: Any, fields: Sequence[str]) -> str | None:
    """The field the id is read from: the first of ``fields`` given (not null) in ``data``; None when none is."""
    if not isinstance(data, dict):
        return None
    return next((name for name in fields if data.get(name) is not None), None)


def spaced_id(data: Any, fields: Sequence[str]) -> tuple[str, str] | None:
    """The field the id is read from (``id_field``) and the id as written there, when it has spaces at either
    end."""
    name = id_field(data, fields)
    given = None if name is None else data[name]
    return (name, given) if name and isinstance(given, str) and given.strip() and given != given.strip() else None


def record_id(value: Any) -> str:
    """A record id as a string: a non-empty string, or an integer (booleans are not integers), trimmed, holding no
    character ``esbridge.ids.refused_character`` refuses (its position counted in ``value`` as given)."""
    if isinstance(value, str) and value.strip():
        found = value.strip()
        problem = refused_character(found, offset=len(value) - len(value.lstrip()))
        if problem is not None:
            raise ValueError(problem)
        return found
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        raise ValueError("must not be empty")
    raise ValueError(f"must be a non-empty string or an integer, got {describe_value(value)}")


# Far deeper than records need, far shallower than what exhausts the recursion of later stages.
MAX_NESTING = 100


class IdentifiedRecord(BaseModel):
    """A record with an ``id``, which must be unique in its file. An id with spaces at either end is stripped
    (``id_warnings`` says so, naming the field it was read from). A subclass whose id may be read from another
    field (``ID_FIELDS``) stores that field stripped too when it stands in for the id. The control characters of
    its ``CLEANED_FIELDS`` become spaces (``control_warnings`` says how many, per field)."""

    ID_FIELDS: ClassVar[tuple[str, ...]] = ("id",)
    """The fields the id is read from, the first given one."""
    CLEANED_FIELDS: ClassVar[tuple[str, ...]] = ()
    """Text fields (strings, or lists of them) whose control characters become spaces (``esbridge.ingest.controls``)."""

    id: str
    _given_id: tuple[str, str] | None = PrivateAttr(default=None)
    _id_field: str = PrivateAttr(default="id")
    _control_warnings: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, data: Any) -> Any:
        return refuse_too_deep(data, MAX_NESTING)

    @model_validator(mode="wrap")
    @classmethod
    def _controls(cls, data: Any, handler: ModelWrapValidatorHandler[IdentifiedRecord]) -> IdentifiedRecord:
        if not isinstance(data, dict):
            return handler(data)
        cleaned, warnings = cleaned_fields(data, cls.CLEANED_FIELDS)
        record = handler({**data, **cleaned} if cleaned else data)
        record._control_warnings = tuple(warnings)
        return record

    @model_validator(mode="wrap")
    @classmethod
    def _spaced_id(cls, data: Any, handler: ModelWrapValidatorHandler[IdentifiedRecord]) -> IdentifiedRecord:
        record = handler(data)
        given = spaced_id(data, cls.ID_FIELDS)
        record._given_id = given if given is not None and given[1].strip() == record.id else None
        record._id_field = id_field(data, cls.ID_FIELDS) or cls.ID_FIELDS[0]
        return record

    @property
    def id_field(self) -> str:
        """The field the id was read from: ``id``, or the field standing in for it (a registry record's ``path``)."""
        return self._id_field

    @property
    def stand_in(self) -> str:
        """Where the id came from, for messages, when another field stood in for it (empty when it did not)."""
        if self._id_field == self.ID_FIELDS[0]:
            return ""
        return f"from field {self._id_field!r}, standing in for the missing {self.ID_FIELDS[0]!r}"

    @property
    def control_warnings(self) -> tuple[str, ...]:
        """A warning per field of ``CLEANED_FIELDS`` whose control characters were replaced by spaces."""
        return self._control_warnings

    @property
    def id_warnings(self) -> tuple[str, ...]:
        if self._given_id is None:
            return ()
        field, given = self._given_id
        if field == self.ID_FIELDS[0]:
            return (f"{field} {given!r} has spaces at either end: stored as {self.id!r}",)
        return (
            f"{field} {given!r}, standing in for the missing {self.ID_FIELDS[0]!r}, has spaces at either end: the id "
            f"and the {field} are stored as {self.id!r}",
        )


def duplicate_id_reason(record: IdentifiedRecord, line: int, first_field: str) -> str:
    """Why ``record`` is skipped: the record on ``line`` had its id, read from ``first_field``; each id named by the
    field it came from when another field stood in for the id."""
    main = record.ID_FIELDS[0]
    said = f"duplicate id {record.id!r}" + (f" {record.stand_in}" if record.stand_in else "")
    where = f"first on line {line}"
    if first_field != main:
        also = first_field == record.id_field
        where += f", from its {first_field!r} too" if also else f", from its {first_field!r} standing in for {main!r}"
    elif record.stand_in:
        where += f", as its {main!r}"
    return f"{said} ({where}); record skipped"
