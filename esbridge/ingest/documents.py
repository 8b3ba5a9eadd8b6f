"""Turning a chunk into the engine document the index schema describes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.ingest.frontmatter import json_safe
from esbridge.ingest.metadata import flatten_metadata
from esbridge.ingest.model import Chunk, Document, Section
from esbridge.text import is_blank

EMBEDDED = "ok"
AWAITING_VECTOR = "missing"
NOTHING_TO_EMBED = "none"
"""A chunk whose embedding text shows nothing (a record with neither title nor text), or in which the model sees
nothing (its vector is zero), gets no vector."""

# Kept in `metadata` for reference, but not worth searching as text.
_UNSEARCHED_METADATA = (
    "unresolved_links",
    "unresolved_link_weights",
    "input_schema",
    "oversized_input_schema",
    "input_schema_bytes",
    "tool_fields",
    "tool_records",
    "tool_description",  # a tool's description is its body already
    "skill_records",
)

# What `esbridge embed --missing` reads back to rebuild a chunk's embedding text.
EMBEDDING_SOURCE_FIELDS = ("chunk_id", "doc_id", "chunk_index", "title", "headings", "body")


def embedding_state(chunk: Chunk, vector: Sequence[float] | None, *, by_model: bool = False) -> str:
    """``by_model``: a model embedded the chunk's text, so a missing vector means there was nothing to embed."""
    if vector is not None:
        return EMBEDDED
    return NOTHING_TO_EMBED if by_model or is_blank(chunk.embedding_text) else AWAITING_VECTOR


def index_document(
    chunk: Chunk, *, source: str, vector: Sequence[float] | None, by_model: bool = False
) -> dict[str, Any]:
    """The engine document of ``chunk``; ``vector`` from ``embeddings.base.passage_vectors`` when ``by_model``."""
    doc = chunk.document or Document(doc_id=chunk.doc_id, title=chunk.title, sections=())
    metadata = json_safe(dict(chunk.metadata))
    document: dict[str, Any] = {
        "doc_id": chunk.doc_id,
        "chunk_id": chunk.chunk_id,
        "chunk_index": chunk.chunk_index,
        "source": source,
        "title": chunk.title,
        "body": chunk.body,
        "headings": list(chunk.headings),
        "code": "\n\n".join(chunk.code),
        "path": doc.path,
        "tags": list(doc.tags),
        "aliases": list(doc.aliases),
        "entity_type": doc.entity_type,
        "status": doc.status,
        "category": doc.category,
        "links": list(doc.links),
        **({"link_weights": dict(doc.link_weights)} if doc.link_weights else {}),
        "created_at": doc.created_at.isoformat() if doc.created_at else None,
        "modified_at": doc.modified_at.isoformat() if doc.modified_at else None,
        "metadata": metadata,
        "metadata_text": flatten_metadata(chunk.metadata, exclude=_UNSEARCHED_METADATA),
        "content_hash": chunk.content_hash,
        "embedding": embedding_state(chunk, vector, by_model=by_model),
    }
    if vector is not None:
        document["vector"] = list(vector)
    return document


def chunk_from_source(source: Mapping[str, Any]) -> Chunk:
    """The chunk an indexed document was made from, as far as its embedding text goes."""
    headings = tuple(str(h) for h in source.get("headings") or ())
    body = str(source.get("body") or "")
    title = str(source.get("title") or "")
    doc = Document(doc_id=str(source["doc_id"]), title=title, sections=(Section(body, headings),))
    return Chunk(
        chunk_id=str(source["chunk_id"]),
        doc_id=doc.doc_id,
        chunk_index=int(source.get("chunk_index") or 0),
        title=title,
        body=body,
        headings=headings,
    )
