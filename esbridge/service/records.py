"""The records of an upsert read as documents: as lines of a JSONL source (``format`` ``jsonl``, the default) or of a
registry source (``registry``), each through the reader ``esbridge ingest`` uses for that format.

A registry record (an MCP server, an A2A agent) makes its own document and one per tool and skill, linked to it
(``esbridge.ingest.registry.record_documents``), so a search finds a tool on its own and answers it with its server.
Upserting the record again replaces all of them: a tool or skill it no longer lists is deleted, as a re-ingest of
the registry file deletes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from esbridge.engines.base import Engine
from esbridge.ingest.json_lines import known_id, surrogate_location
from esbridge.ingest.json_values import describe_validation_error
from esbridge.ingest.jsonl import JsonlRecord, record_document
from esbridge.ingest.model import Document
from esbridge.ingest.registry import SKILL, TOOL, owned_prefixes, record_documents
from esbridge.ingest.registry_records import RegistryRecord

RecordFormat = Literal["jsonl", "registry"]


@dataclass
class Given:
    """A valid record: the ids of the documents it makes, and those documents (a JSONL record's is made under the
    write's lock, once the index says which of its links' targets exist)."""

    id: str
    ids: list[str]
    jsonl: JsonlRecord | None = None
    documents: list[Document] = field(default_factory=list)
    prefixes: tuple[str, ...] = ()
    """What the ids of the documents it owns start with (a server's tools): those it no longer makes are stale."""

    @property
    def link_targets(self) -> set[str]:
        return set(self.jsonl.links.targets) if self.jsonl is not None else set()

    def made(self, known: set[str]) -> list[Document]:
        """Its documents, a JSONL record's links to ids outside ``known`` counted as unresolved."""
        return [record_document(self.jsonl, known)] if self.jsonl is not None else self.documents


def read_record(data: Mapping[str, Any], record_format: RecordFormat) -> Given | str:
    """``data`` read as a record of ``record_format``, or why it cannot be."""
    where = surrogate_location(data)
    if where is not None:
        return f"field {where!r}: unpaired UTF-16 surrogate escape in a string"
    try:
        if record_format == "registry":
            record = RegistryRecord.model_validate(data)
            documents = record_documents(record)
            ids = [document.doc_id for document in documents]
            return Given(record.id, ids, documents=documents, prefixes=owned_prefixes(record.id))
        jsonl = JsonlRecord.model_validate(data)
        return Given(jsonl.id, [jsonl.id], jsonl=jsonl)
    except ValidationError as exc:
        return describe_validation_error(exc)


def given_id(data: Mapping[str, Any], record_format: RecordFormat) -> str | None:
    """The id of a record that could not be read, when its id can be (a registry record's ``path`` stands in)."""
    found = known_id(data, "id")
    if found is None and record_format == "registry" and data.get("id") is None:
        found = known_id(data, "path")
    return found


def document_warnings(given: Given, documents: Sequence[Document]) -> list[str]:
    """The warnings of a record's documents, each of a tool or skill naming its document."""
    return [
        warning if document.doc_id == given.id else f"document {document.doc_id!r}: {warning}"
        for document in documents
        for warning in document.warnings
    ]


def owned_documents(engine: Engine, index: str, valid: Mapping[int, Given]) -> dict[str, int]:
    """The tools and skills the index holds for the registry records in ``valid``: doc id -> the record's position.
    Found by the link their chunks hold to their record, kept when their id starts as the record's own do."""
    return {doc_id: position for doc_id, position, _ in _owned_chunks(engine, index, valid)}


def owned_chunks(engine: Engine, index: str, record_id: str) -> dict[str, list[str]]:
    """The tools and skills the index holds for the record ``record_id`` (``owned_documents``): doc id -> the ids of
    its chunks, which all hold the link, found by the same query."""
    found: dict[str, list[str]] = {}
    given = {0: Given(record_id, [record_id], prefixes=owned_prefixes(record_id))}
    for doc_id, _, chunk_id in _owned_chunks(engine, index, given):
        chunks = found.setdefault(doc_id, [])
        if chunk_id not in chunks:  # a chunk linking to the record twice
            chunks.append(chunk_id)
    return found


def _owned_chunks(engine: Engine, index: str, valid: Mapping[int, Given]) -> Iterator[tuple[str, int, str]]:
    """(doc id, its record's position, chunk id) of every chunk of the tools and skills ``valid``'s records own."""
    owners = {given.id: position for position, given in valid.items() if given.prefixes}
    if not owners:
        return
    query = {
        "bool": {
            "filter": [{"terms": {"links": sorted(owners)}}, {"terms": {"entity_type": [TOOL, SKILL]}}],
        }
    }
    for hit in engine.scan(index, query, ["doc_id", "links"], sort_field="chunk_id"):
        doc_id = str(hit.source.get("doc_id"))
        links = hit.source.get("links") or []
        for target in links if isinstance(links, list) else [links]:
            position = owners.get(str(target))
            if position is not None and doc_id.startswith(valid[position].prefixes):
                yield doc_id, position, hit.id
