"""Resolving a note's link targets to the doc ids of the vault, the way Obsidian and Dendron do.

Resolution of a cleaned target (no ``#heading``, no ``.md``, no ``dendron://vault/`` prefix), case-insensitively
and whatever the Unicode normalization (a file name written on macOS is decomposed, NFD, while the link typed
in the note is usually composed, NFC); of notes whose paths differ only so (``Note.md`` and ``note.md`` on Linux),
the one the target spells exactly wins:

1. ``/a/b``: the note at that vault path, nothing else.
2. The note at the target's path relative to the linking note's folder (``[[sibling]]``, ``[x](../y.md)``).
3. The note at the target's path from the vault root (``[[folder/note]]``).
4. The notes whose path ends with the target (``[[note]]`` anywhere, ``[[folder/note]]`` in a subfolder):
   the shortest path wins (fewest folders, then fewest characters, then alphabetical).

``[[a|b]]`` is target-first in Obsidian and label-first in Dendron; see ``LinkConvention``.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

LinkConvention = Literal["obsidian", "dendron"]

DENDRON_MARKERS = ("dendron.yml", "dendron.code-workspace")
_DENDRON_VAULT_PREFIX = re.compile(r"^dendron://[^/]*/", re.IGNORECASE)
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_NOTE_SUFFIX = ".md"


@dataclass(frozen=True)
class Wikilink:
    """The parts of ``[[...]]``: what the text before and after ``|`` says, and whether it embeds (``![[``)."""

    first: str
    second: str | None
    embed: bool = False


class NoteIndex:
    """The doc ids of one vault, looked up by path and by file name without regard to case."""

    def __init__(self, doc_ids: Iterable[str]) -> None:
        self._by_path: dict[str, list[str]] = {}
        by_name: dict[str, list[str]] = {}
        for doc_id in doc_ids:
            self._by_path.setdefault(fold(doc_id), []).append(doc_id)
            by_name.setdefault(fold(posixpath.basename(doc_id)), []).append(doc_id)
        self._by_name = {name: sorted(ids, key=_shortest_first) for name, ids in by_name.items()}

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and fold(doc_id) in self._by_path

    def resolve(self, target: str, source_id: str) -> str | None:
        """The doc id a cleaned target names, seen from the note ``source_id``; None if no note matches."""
        if not target:
            return None
        if target.startswith("/"):
            return self._at(posixpath.normpath(target.lstrip("/")))
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(source_id), target))
        found = self._at(relative) or self._at(posixpath.normpath(target))
        if found is not None:
            return found
        spelled = posixpath.normpath(target)
        wanted = fold(spelled)
        if wanted.startswith("../"):
            return None
        suffix = "/" + wanted
        for doc_id in self._by_name.get(posixpath.basename(wanted), ()):
            folded = fold(doc_id)
            if folded == wanted or folded.endswith(suffix):
                return self._as_spelled(folded, spelled)
        return None

    def _at(self, path: str) -> str | None:
        return None if path.startswith("../") else self._as_spelled(fold(path), path)

    def _as_spelled(self, folded: str, spelled: str) -> str | None:
        """The note at the folded path; of notes whose names differ only in case or Unicode normalization
        (``Note.md`` and ``note.md`` on Linux), the one the link spells exactly, else the first."""
        same = self._by_path.get(folded)
        if not same:
            return None
        return next((doc_id for doc_id in same if doc_id == spelled or doc_id.endswith("/" + spelled)), same[0])


def fold(text: str) -> str:
    """``text`` for comparison: case folded and composed (NFC), so ``Café`` in NFD matches ``café`` in NFC."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def normalize_target(target: str) -> str:
    """A cleaned target in the form ``NoteIndex.resolve`` reads it, so two targets that always resolve alike are
    equal: ``./beta``, ``beta/`` and ``x/../beta`` are ``beta``; ``//beta`` is ``/beta``; ``../beta`` stays."""
    path = posixpath.normpath(target.lstrip("/") or ".")
    if not target.startswith("/"):
        return path
    return "/" if path == "." else "/" + path


def _shortest_first(doc_id: str) -> tuple[int, int, str]:
    return doc_id.count("/"), len(doc_id), doc_id


def parse_wikilink(inner: str, *, embed: bool = False) -> Wikilink:
    """Split the text between ``[[`` and ``]]``; ``\\|`` (the table-safe pipe) counts as ``|``."""
    first, pipe, second = inner.replace("\\|", "|").partition("|")
    return Wikilink(first.strip(), second.strip() if pipe else None, embed)


def clean_target(raw: str) -> str | None:
    """The note path a link target names, or None for a link inside the same note or to a URL."""
    target = _DENDRON_VAULT_PREFIX.sub("", raw.strip())
    if _URL_SCHEME.match(target):
        return None
    target = target.partition("#")[0].strip()
    if target.casefold().endswith(_NOTE_SUFFIX):
        target = target[: -len(_NOTE_SUFFIX)]
    return target or None


def wikilink_readings(link: Wikilink, convention: LinkConvention) -> tuple[str | None, str | None]:
    """The target as the vault's convention reads ``[[a|b]]``, and as the other convention would."""
    if link.second is None:
        return clean_target(link.first), None
    if convention == "dendron":
        return clean_target(link.second), clean_target(link.first)
    return clean_target(link.first), clean_target(link.second)


def wikilink_label(link: Wikilink, convention: LinkConvention) -> str:
    """The text a reader sees in place of the link: its label, or its target when the label is empty
    (``[[target|]]`` reads as ``[[target]]``)."""
    target = link.first
    if link.second is not None:
        label, target = (link.first, link.second) if convention == "dendron" else (link.second, link.first)
        if label:
            return label
    target = _DENDRON_VAULT_PREFIX.sub("", target)
    page, _, heading = target.partition("#")
    return f"{page} {heading}".strip()


def markdown_link_target(href: str) -> tuple[str, bool] | None:
    """The vault path of a relative Markdown link and whether it names a ``.md`` file; None for URLs."""
    if not href or href.startswith("#") or _URL_SCHEME.match(href) or href.startswith("//"):
        return None
    path = unquote(href.partition("#")[0].partition("?")[0]).strip()
    if not path:
        return None
    names_note = path.casefold().endswith(_NOTE_SUFFIX)
    return (path[: -len(_NOTE_SUFFIX)] if names_note else path), names_note


def detect_convention(root: Path, frontmatters: Sequence[Mapping[str, Any]]) -> LinkConvention:
    """Dendron if a Dendron workspace file sits in the vault or its parent, or if most notes carry
    Dendron's frontmatter (an ``id`` and an epoch-milliseconds ``updated``); Obsidian otherwise."""
    if any((folder / marker).is_file() for folder in (root, root.parent) for marker in DENDRON_MARKERS):
        return "dendron"
    dendron_like = sum(1 for data in frontmatters if _has_dendron_frontmatter(data))
    return "dendron" if frontmatters and dendron_like * 2 > len(frontmatters) else "obsidian"


def _has_dendron_frontmatter(data: Mapping[str, Any]) -> bool:
    updated = data.get("updated")
    return "id" in data and isinstance(updated, int) and not isinstance(updated, bool)
