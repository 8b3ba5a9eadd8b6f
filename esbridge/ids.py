"""Chunk ids: the one place they are formatted and read back.

A chunk's id is its document's id, ``#`` and its position in the document (``notes/a.md#0``). Document
ids may hold ``#`` themselves, so the position is whatever follows the last one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEPARATOR = "#"


def chunk_id(doc_id: str, position: int) -> str:
    """The id of chunk ``position`` (0-based) of document ``doc_id``."""
    return f"{doc_id}{SEPARATOR}{position}"


def first_chunk(doc_id: str) -> str:
    """The id of a document's first chunk; every document has one, and it carries the document's links."""
    return chunk_id(doc_id, 0)


def doc_id_of(chunk: str) -> str:
    """The document id a chunk id was formatted from (an id without a position is taken as a document id)."""
    head, separator, position = chunk.rpartition(SEPARATOR)
    return head if separator and position.isdigit() else chunk


def document_of(chunk: str, stored: Mapping[str, Any]) -> str:
    """The document a search hit belongs to: its stored ``doc_id``, else read from its chunk id."""
    return str(stored.get("doc_id") or doc_id_of(chunk))
