"""Chunk ids: the one place they are formatted and read back.

A chunk's id is its document's id, ``#`` and its position in the document (``notes/a.md#0``). Document
ids may hold ``#`` themselves, so the position is whatever follows the last one.

A document id holds no control character (C0, DEL, C1: NUL, line breaks, ESC), no line or paragraph separator
and no bidirectional formatting character (U+202E RIGHT-TO-LEFT OVERRIDE and its kin): ids are echoed in
answers, warnings, terminals and logs, where such a character cuts a line, drives a terminal or shows the id
reversed (``Trojan Source``). Every source of new ids (a JSONL or BEIR record, a note's path, the sidecar's
upserts) is checked by ``refused_character``. The sidecar's delete is not: documents stored before the rule, or
restored by ``esbridge import``, may hold such ids, and answers show them through ``shown_escaped``.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from typing import Any

SEPARATOR = "#"

# The Unicode Bidi_Control characters: marks, embeddings, overrides and isolates.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SEPARATORS = frozenset("\u2028\u2029")


def refused_character(doc_id: str, *, offset: int = 0) -> str | None:
    """Why ``doc_id`` cannot be a document id because of a character it holds (see the module docstring), naming
    the first such character by code point and position (from 0, plus ``offset``: where ``doc_id`` begins in what
    was given), never as itself; None when it holds none."""
    for position, char in enumerate(doc_id, start=offset):
        if char in _BIDI_CONTROLS:
            what = f"the bidirectional formatting character U+{ord(char):04X} ({unicodedata.name(char)})"
        elif char in _SEPARATORS:
            what = f"the separator U+{ord(char):04X} ({unicodedata.name(char)})"
        elif unicodedata.category(char) == "Cc":
            what = f"the control character U+{ord(char):04X}"
        else:
            continue
        return (
            f"holds {what} at position {position}; ids must not hold control, line-separating or bidirectional "
            "formatting characters"
        )
    return None


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


def shown_escaped(text: str) -> str:
    """``text`` with each character ``refused_character`` refuses written as its escape (``\\u202e``), to be shown."""
    return "".join(f"\\u{ord(char):04x}" if refused_character(char) else char for char in text)


def shown_path(path: str | os.PathLike[str]) -> str:
    """A file or folder name as messages show it: escaped as ``shown_escaped`` escapes text, and bytes that are
    not UTF-8 (which a Linux name may hold) as ``\\xNN``, so that a path given on the command line can neither
    split the line naming it nor drive the terminal or show itself reversed."""
    return shown_escaped(os.fsencode(path).decode("utf-8", "backslashreplace"))
