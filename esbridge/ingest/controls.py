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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from esbridge.ingest.model import Section

_CONTROL = re.compile("[\x00-\x08\x0e-\x1f]")
_SPACE = re.compile("[\x0b\x0c]")


def without_controls(text: str) -> tuple[str, int]:
    """``text`` with each control character (see the module docstring) replaced by a space, and how many were
    (vertical tabs and form feeds not counted)."""
    return _CONTROL.subn(" ", _SPACE.sub(" ", text))


def without_controls_each(values: Sequence[str]) -> tuple[list[str], int]:
    """Each of ``values`` (a record's tags) as ``without_controls`` makes it, and how many were replaced in all."""
    cleaned = [without_controls(value) for value in values]
    return [text for text, _ in cleaned], sum(count for _, count in cleaned)


def cleaned_fields(data: Mapping[str, Any], fields: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """The values of ``fields`` in a record's raw ``data`` that are text (a string, or a list of them, as tags are),
    with their control characters replaced by spaces, and a warning per field that had any (``counted_fields``).
    A value of another type is left out, for validation to refuse."""
    cleaned: dict[str, Any] = {}
    counts: list[tuple[str, int]] = []
    for name in fields:
        value = data.get(name)
        if isinstance(value, str):
            cleaned[name], count = without_controls(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            cleaned[name], count = without_controls_each(value)
        else:
            continue
        counts.append((name, count))
    return cleaned, counted_fields(counts)


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
