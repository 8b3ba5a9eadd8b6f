"""What every source (Markdown vault, JSONL, BEIR) produces: documents made of chunks, or problems.

A source never raises for one bad input: it yields a ``Problem`` naming the input and the reason and
goes on, so one malformed record cannot stop a load.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from esbridge.ids import shown_escaped


@dataclass(frozen=True)
class Section:
    """A piece of a document's text before chunking: the text under one heading path."""

    text: str
    headings: tuple[str, ...] = ()
    code: tuple[str, ...] = ()


@dataclass(frozen=True)
class Document:
    """One source record (a note, a JSONL line, a BEIR document), ready to be chunked and embedded.

    ``doc_id`` is stable across runs (a note's vault-relative path without extension, a record's id),
    so loading the same input twice overwrites instead of duplicating. ``links`` holds the doc ids of
    link targets that exist in the same source; unresolved targets are kept in ``metadata``.
    """

    doc_id: str
    title: str
    sections: Sequence[Section]
    path: str | None = None
    tags: Sequence[str] = ()
    aliases: Sequence[str] = ()
    links: Sequence[str] = ()
    link_weights: Mapping[str, float] = field(default_factory=dict)
    """Weights of links that do not weigh 1 (``{doc id: weight}``, every key one of ``links``)."""
    entity_type: str | None = None
    status: str | None = None
    category: str | None = None
    created_at: datetime | None = None
    modified_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    warnings: Sequence[str] = ()
    doc_prefixes: tuple[str, ...] = field(default=(), compare=False)
    """Ids of the other documents its input made start with one of these (a registry server's tools): read whole
    with it, so their indexed chunks that the input no longer makes are stale."""
    first_chunk_only: frozenset[str] = field(default=frozenset(), compare=False)
    """Metadata keys stored on the first chunk only (a tool's input schema): kept whole, once, however many
    chunks the text makes."""
    replaces: tuple[str, ...] = field(default=(), compare=False)
    """Ids this document had before (a skill's name-made id, now its A2A id): their chunks are deleted as any stale
    chunk is, but not counted as deletions by the mass-delete guard, since the document is still there."""

    def __post_init__(self) -> None:
        if not self.doc_id:
            raise ValueError("doc_id must not be empty")
        stray = sorted(set(self.link_weights) - set(self.links))
        if stray:
            raise ValueError(f"link_weights names {stray[0]!r}, which is not one of the document's links")


@dataclass(frozen=True)
class Problem:
    """An input that could not be read (or only partly): where it is and why."""

    source: str
    reason: str
    line: int | None = None
    doc_id: str | None = field(default=None, compare=False)
    """The document the input would have become, when known: its indexed chunks are then kept."""
    doc_prefixes: tuple[str, ...] = field(default=(), compare=False)
    """Ids of the documents the input would have made besides ``doc_id`` start with one of these (a registry
    server's tools): their indexed chunks are kept too."""

    @property
    def id(self) -> str:
        """Where the input is, as reports show it: a control character in a file name or a record's path (a line
        break) written as its escape, so that it neither splits nor garbles the line that names it."""
        where = shown_escaped(self.source)
        return f"{where}:{self.line}" if self.line is not None else where


@dataclass(frozen=True)
class Chunk:
    """The unit that is indexed: one engine document with id ``chunk_id``."""

    chunk_id: str
    doc_id: str
    chunk_index: int
    title: str
    body: str
    headings: tuple[str, ...] = ()
    code: tuple[str, ...] = ()
    document: Document | None = field(default=None, compare=False, repr=False)

    @property
    def embedding_text(self) -> str:
        """What the model embeds: title and heading path give a chunk its context."""
        context = " > ".join(part for part in (self.title, *self.headings) if part)
        return f"{context}\n{self.body}".strip() if context else self.body.strip()

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The metadata this chunk stores: its document's, less ``first_chunk_only`` after the first chunk."""
        doc = self.document
        if doc is None:
            return {}
        if self.chunk_index == 0 or not doc.first_chunk_only:
            return doc.metadata
        return {key: value for key, value in doc.metadata.items() if key not in doc.first_chunk_only}

    @property
    def content_hash(self) -> str:
        """Changes whenever anything that is indexed for this chunk changes."""
        doc = self.document
        payload = {
            "title": self.title,
            "body": self.body,
            "headings": self.headings,
            "code": self.code,
            "doc": None
            if doc is None
            else {
                "path": doc.path,
                "tags": list(doc.tags),
                "aliases": list(doc.aliases),
                "links": list(doc.links),
                # Only when weighted: documents without weights keep the hashes they always had.
                **({"link_weights": dict(doc.link_weights)} if doc.link_weights else {}),
                "entity_type": doc.entity_type,
                "status": doc.status,
                "category": doc.category,
                "created_at": doc.created_at.isoformat() if doc.created_at else None,
                "modified_at": doc.modified_at.isoformat() if doc.modified_at else None,
                "metadata": self.metadata,
            },
        }
        encoded = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(encoded).hexdigest()
