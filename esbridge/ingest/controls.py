"""Control characters in text to index: each C0 control other than tab, line feed and carriage return (NUL,
bell, escape, ...) becomes a space, and the source is told how many were replaced. A vertical tab or form feed
becomes a space without a word: both are white space (Unicode's and the engines' analyzers'), and pasted text
has them (a word processor's line break is a vertical tab), so the text reads and is searched as before.

A space, not nothing: the engines' analyzers split words at such a character (OpenSearch's standard analyzer
reads ``hello<NUL>world`` as ``hello`` and ``world``), so a space keeps every word searchable as it was, where
removing it would join two words into one. Left in, a NUL was turned into U+FFFD by the Markdown parser without a
word (stored and shown as such), and YAML refuses any of them in frontmatter, which then lost its title, tags and
dates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from esbridge.ingest.model import Section

_CONTROL = re.compile("[\x00-\x08\x0e-\x1f]")
_SPACE = re.compile("[\x0b\x0c]")


def without_controls(text: str) -> tuple[str, int]:
    """``text`` with each control character (see the module docstring) replaced by a space, and how many were
    (vertical tabs and form feeds not counted)."""
    return _CONTROL.subn(" ", _SPACE.sub(" ", text))


def controls_warning(count: int, where: str) -> str:
    """The warning for ``count`` replaced control characters in ``where`` (``the note``, ``field 'text'``)."""
    return (
        f"{count} control character(s) (NUL or another C0 control) in {where} replaced by spaces; the text is "
        "otherwise indexed as written"
    )


def counted_fields(found: Iterable[tuple[str, int]]) -> list[str]:
    """A warning per field that had control characters replaced, from ``(field name, count)`` pairs."""
    return [controls_warning(count, f"field {name!r}") for name, count in found if count]


def cleaned_sections(sections: Sequence[Section]) -> tuple[tuple[Section, ...], int]:
    """``sections`` with their text's control characters replaced by spaces, and how many were."""
    cleaned = [without_controls(section.text) for section in sections]
    return tuple(replace(section, text=text) for section, (text, _) in zip(sections, cleaned, strict=True)), sum(
        count for _, count in cleaned
    )
