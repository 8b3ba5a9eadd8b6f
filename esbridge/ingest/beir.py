"""BEIR datasets: a folder with ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

The corpus becomes Documents (``doc_id`` = ``_id``, one section holding ``text``; ``metadata`` and any
other fields go into ``Document.metadata``), with the same per-line robustness as the JSONL source: a
bad line (one nesting a field more than 100 levels deep included) is a ``Problem`` and reading goes on.
Links and their weights are read as the JSONL source reads them (``links`` and ``link_weights``, at the
top level or in ``metadata``); a corpus with links is read twice, to know which targets exist. A control
character (NUL, ...) in ``title`` or ``text`` becomes a space, with a warning per field, as in a JSONL record
(``esbridge.ingest.controls``); ``metadata`` keeps it. Queries
and relevance judgements are evaluation input, so they come back as plain dicts and any bad line raises
``SourceError`` instead: an evaluation that silently lost queries would report wrong figures.
"""

from __future__ import annotations

import codecs
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator, model_validator

from esbridge.errors import ConfigError, SourceError
from esbridge.ids import shown_path
from esbridge.ingest.controls import counted_fields, without_controls
from esbridge.ingest.json_lines import MAX_NESTING, known_id, read_json_lines, record_id, require_file
from esbridge.ingest.json_values import describe_validation_error, refuse_too_deep
from esbridge.ingest.jsonl import merged_metadata
from esbridge.ingest.model import Document, Problem, Section
from esbridge.ingest.record_links import RecordLinks, consume_links, documents_with_links, resolve_links
from esbridge.line_ends import split_lines
from esbridge.text import is_blank, where_not_utf8

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FOLDER = "qrels"
ID_FIELD = "_id"


class BeirRecord(BaseModel):
    """One line of ``corpus.jsonl`` or ``queries.jsonl``."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(alias="_id")
    title: StrictStr | None = None
    text: StrictStr | None = None
    metadata: dict[str, Any] = {}
    links: RecordLinks = RecordLinks()

    @model_validator(mode="before")
    @classmethod
    def _links(cls, data: Any) -> Any:
        return consume_links(data)

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, data: Any) -> Any:
        return refuse_too_deep(data, MAX_NESTING)

    @model_validator(mode="before")
    @classmethod
    def _id_by_another_name(cls, data: Any) -> Any:
        # Other formats name it "id"; said once here, rather than leave "'_id' is missing" on every line to puzzle.
        if isinstance(data, dict) and ID_FIELD not in data and "id" in data:
            raise ValueError(f"field {ID_FIELD!r} is missing (the record has 'id': BEIR names the id {ID_FIELD!r})")
        return data

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str:
        return record_id(value)

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: Any) -> Any:
        return {} if value is None else value


def read_beir_corpus(folder: Path) -> Iterator[Document | Problem]:
    """Every document of ``folder/corpus.jsonl``, or a ``Problem`` naming the line and why."""
    path = folder / CORPUS_FILE
    require_file(path, "BEIR corpus", keep_name=True)
    return _corpus(path)


def _corpus(path: Path) -> Iterator[Document | Problem]:
    return documents_with_links(lambda: _records(path), corpus_document)


def _records(path: Path) -> Iterator[BeirRecord | Problem]:
    first_line: dict[str, int] = {}
    for item in read_json_lines(path, ID_FIELD):
        if isinstance(item, Problem):
            yield item
            continue
        number, data = item
        try:
            record = BeirRecord.model_validate(data)
        except ValidationError as exc:
            yield Problem(path.name, describe_validation_error(exc), number, doc_id=known_id(data, ID_FIELD))
            continue
        if record.id in first_line:
            reason = f"duplicate _id {record.id!r} (first on line {first_line[record.id]}); record skipped"
            yield Problem(path.name, reason, number, doc_id=record.id)
            continue
        first_line[record.id] = number
        yield record


def corpus_document(record: BeirRecord, known_ids: set[str] | None = None) -> Document:
    """The ``Document`` of a corpus line; links to ids outside ``known_ids`` count as unresolved."""
    title, titled = without_controls(record.title or "")
    text, texted = without_controls(record.text or "")
    title, text = title.strip(), text.strip()
    links = resolve_links(record.id, record.links, known_ids or set())
    metadata, overridden = merged_metadata(record.model_extra or {}, record.metadata)
    return Document(
        doc_id=record.id,
        title=title,
        sections=(Section(text),) if text else (),
        links=links.links,
        link_weights=links.weights,
        metadata={**metadata, **links.metadata},
        warnings=(
            *overridden,
            *counted_fields((("title", titled), ("text", texted))),
            *links.warnings,
            *(() if title or text else ("record has neither title nor text",)),
        ),
    )


def read_beir_queries(folder: Path, blank: dict[str, int] | None = None) -> dict[str, str]:
    """Query id to query text, from ``folder/queries.jsonl``; raises ``SourceError`` on any bad line. A query
    without text is refused too, unless ``blank`` is given: it is then recorded there (id -> line) and left out."""
    path = folder / QUERIES_FILE
    require_file(path, "BEIR queries file", keep_name=True)
    shown = shown_path(path)
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for item in read_json_lines(path, ID_FIELD):
        if isinstance(item, Problem):
            raise SourceError(f"{shown}, line {item.line}: {item.reason}")
        number, data = item
        try:
            record = BeirRecord.model_validate(data)
        except ValidationError as exc:
            raise SourceError(f"{shown}, line {number}: {describe_validation_error(exc)}") from exc
        if record.id in first_line:
            raise SourceError(
                f"{shown}, line {number}: duplicate query _id {record.id!r} (first on line {first_line[record.id]}); "
                "keep one of the two"
            )
        first_line[record.id] = number
        if not record.text or is_blank(record.text):  # as a search would refuse it
            if blank is None:
                raise SourceError(f"{shown}, line {number}: query {record.id!r} has no text")
            blank[record.id] = number
            continue
        queries[record.id] = record.text.strip()
    return queries


def read_qrels(folder: Path, split: str = "test") -> dict[str, dict[str, int]]:
    """Query id to {doc id: relevance}, from ``folder/qrels/<split>.tsv``.

    Rows are ``query-id<TAB>corpus-id<TAB>score`` (empty fields after the score, left by trailing tabs, ``\\r\\n``
    or ``\\r`` line ends and a byte order mark at a line's start are accepted); a first non-blank line of three
    fields whose last is not a number is the header and is skipped, and so is a later line that repeats it. Raises
    ``SourceError`` for a missing file (naming the splits there are), for a file that is not UTF-8 text (naming the
    line), for any malformed row (one in another layout, spaces or TREC's four fields, saying so), and for a
    document judged twice for a query with different scores (a repeat of the same score is harmless).
    """
    if not split or Path(split).name != split or split in (".", ".."):
        raise ConfigError(f"split must be a plain name such as 'test', got {split!r}")
    path = folder / QRELS_FOLDER / f"{split}.tsv"
    shown = shown_path(path)
    if not path.is_file():
        available = sorted(file.stem for file in (folder / QRELS_FOLDER).glob("*.tsv"))
        hint = f"; splits available: {', '.join(available)}" if available else ""
        raise SourceError(f"BEIR qrels file not found: {shown}{hint}")
    lines = qrels_lines(path)
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    header_line = next((number for number, line in enumerate(lines, start=1) if line.strip()), 0)
    header: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split("\t")]
        while len(fields) > 3 and not fields[-1]:  # trailing tabs: the three fields are still certain
            fields.pop()
        if number == header_line and _is_header(fields, line.split()):
            header = line.split()
            continue
        if line.split() == header:  # the first line's header again: files joined with cat keep each one's
            continue
        if len(fields) != 3 or not all(fields):
            raise SourceError(f"{shown}, line {number}: {_row_problem(line)}")
        if not _INTEGER.fullmatch(fields[2]):  # int() would also read "1_0" as 10 and other scripts' digits
            raise SourceError(f"{shown}, line {number}: score {fields[2]!r} is not an integer")
        score = int(fields[2])
        judged = qrels.setdefault(fields[0], {})
        if fields[1] in judged and judged[fields[1]] != score:
            raise SourceError(
                f"{shown}, line {number}: query {fields[0]!r} judges document {fields[1]!r} {score}, but line "
                f"{first_line[(fields[0], fields[1])]} judges it {judged[fields[1]]}; keep one of the two rows"
            )
        first_line.setdefault((fields[0], fields[1]), number)
        judged[fields[1]] = score
    return qrels


_INTEGER = re.compile(r"[+-]?[0-9]+")


def qrels_lines(path: Path) -> list[str]:
    """The lines of a qrels file, ended by ``\\n``, ``\\r\\n`` or ``\\r`` only (``str.splitlines`` also ends one at
    characters an id may hold, such as U+2028 or U+0085, and would number every later line wrong), each without a
    byte order mark at its start (the first line's, and those of files joined with ``cat``). Raises ``SourceError``
    for a file that cannot be read or is not UTF-8 text, naming the line."""
    shown = shown_path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read {shown}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(_not_utf8(path, raw, exc)) from exc
    return [line.removeprefix("\ufeff") for line in split_lines(text)]


def _is_header(fields: list[str], words: list[str]) -> bool:
    """Whether a first line is three fields whose last is not a number (``query-id corpus-id score``, by tabs or
    spaces); a first row scored ``1.0`` is a row, refused as any other."""
    return any(len(parts) == 3 and not _is_number(parts[2]) for parts in (fields, words))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _row_problem(line: str) -> str:
    """Why a row is not three tab-separated fields, naming the layouts such files are often in instead."""
    expected = "expected query-id, corpus-id and score separated by tabs"
    fields, words = [field.strip() for field in line.split("\t")], line.split()
    if len(words) == 4 and _is_number(words[3]):
        return f"{expected}; this row has four fields, as TREC qrels have (query-id 0 corpus-id score)"
    if len(fields) == 1 and len(words) == 3:
        return f"{expected}; this row separates its fields by spaces"
    if len(fields) == 3:
        empty = "query-id" if not fields[0] else "corpus-id" if not fields[1] else "score"
        return f"{expected}; this row has an empty {empty}"
    return f"{expected}; this row has {len(fields)} field{'s' if len(fields) != 1 else ''}"


_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)  # UTF-32's first: UTF-32LE's mark begins with UTF-16LE's


def _not_utf8(path: Path, raw: bytes, exc: UnicodeDecodeError) -> str:
    """Why a qrels file is not UTF-8 text: compressed or UTF-16/32 text, with the command that makes it UTF-8 in
    place (the file keeps its name: eval reads qrels/<split>.tsv), or the line and byte where it stops being
    UTF-8."""
    shown = shown_path(path)
    name, converted = shlex.quote(shown), shlex.quote(shown_path(path.with_name(f"{path.name}.utf8")))
    if raw.startswith(b"\x1f\x8b"):
        return (
            f"cannot read {shown}: it is gzip-compressed: decompress it first "
            f"(gunzip -c {name} > {converted} && mv {converted} {name})"
        )
    for mark, encoding in _WIDE_BOMS:
        if raw.startswith(mark):
            return (
                f"cannot read {shown}: it is {encoding} text, not UTF-8: convert it first "
                f"(iconv -f {encoding} -t UTF-8 {name} > {converted} && mv {converted} {name})"
            )
    return f"{shown}, {where_not_utf8(exc)}; the file must be UTF-8 text"
