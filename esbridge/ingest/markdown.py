"""The Markdown vault source: every ``.md`` note of an Obsidian or Dendron vault as a ``Document``.

A note's ``doc_id`` is its vault-relative path without ``.md`` (forward slashes), its ``path`` the same
with the extension. Hidden folders and files (``.obsidian``, ``.git``, ...) and ``node_modules`` are
skipped; symbolic links to folders outside the vault are followed, and a note that is a symbolic link to a file
other than a note is not read (see ``note_paths``). A file that is
not UTF-8 becomes a ``Problem``; a control character (NUL, ...) becomes a space, with a warning counting them
(``controls``); broken frontmatter becomes a warning on a Document that is still indexed
(frontmatter that is not a mapping is kept as its text, ``metadata["frontmatter_text"]``).

Title: frontmatter ``title``, else the first H1 (then left out of the heading paths), else the file name.
``modified_at``: frontmatter ``modified``/``updated``/``modified_at``, else the file's mtime.

Links. ``[[target]]``, ``[[target#heading]]``, ``[[target|label]]``, ``![[embed]]`` and relative Markdown
links to notes (``[t](../x/other.md#h)``) are resolved as ``links.NoteIndex.resolve`` describes. The two
tools disagree on ``[[a|b]]``: Obsidian reads target ``a``, label ``b``; Dendron reads label ``a``,
target ``b``. The convention is chosen once per vault (``links.detect_convention``: a Dendron workspace
file next to the vault, or Dendron frontmatter in most notes), and a link whose conventional reading
names no note while the other reading does is read the other way, so a vault mixing both still links.
Resolved doc ids go, deduplicated and without self-links, into ``Document.links``; targets naming no
note go, in the form they are resolved in (``[[./beta/]]`` and ``[b](beta.md#h)`` as ``beta``) and deduplicated as
they are resolved (``[[Beta]]`` and ``[[beta]]`` once, as first written), into ``metadata["unresolved_links"]``, so
a note named beta in a later run resolves them all (Markdown links only when they point at a ``.md`` file;
wikilinks to attachments such as images are neither). In an Obsidian vault, wikilinks in frontmatter values
(``up: "[[Parent]]"``) are links too, as Obsidian counts them, ahead of those in the text. In a Dendron vault
a tag ``#x`` also links to the note ``tags.x`` when it exists, as Dendron itself does.

Tags: frontmatter ``tags`` (a list, or a space/comma-separated string) then ``#tags`` in the text, without
``#``, deduplicated case-insensitively; see ``markdown_syntax`` for what counts as a tag.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from esbridge.errors import EsbridgeWarning, SourceError
from esbridge.ids import refused_character, shown_escaped, shown_path
from esbridge.ingest.controls import controls_warning, without_controls
from esbridge.ingest.frontmatter import FRONTMATTER_TEXT, UNREADABLE, interpret_frontmatter, load_frontmatter
from esbridge.ingest.links import (
    LinkConvention,
    NoteIndex,
    Wikilink,
    detect_convention,
    fold,
    markdown_link_target,
    normalize_target,
    parse_wikilink,
    wikilink_label,
    wikilink_readings,
)
from esbridge.ingest.markdown_syntax import ParsedNote, parse_note, read_frontmatter
from esbridge.ingest.metadata import with_computed
from esbridge.ingest.model import Document, Problem, Section
from esbridge.text import line_not_utf8

NOTE_SUFFIX = ".md"
# A note given on its own may also be a .markdown file; inside a vault only .md files are notes.
NOTE_FILE_SUFFIXES = frozenset({NOTE_SUFFIX, ".markdown"})
SKIPPED_FOLDERS = frozenset({"node_modules"})
# As the inline rule of ``markdown_syntax`` reads them: no brackets or line break inside.
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
ATTACHMENT_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".avif", ".pdf", ".mp3", ".mp4", ".webm", ".mov"}
    | {".ogg", ".wav", ".m4a", ".csv", ".canvas", ".excalidraw"}
)


@dataclass(frozen=True)
class NoteFile:
    """A note read from disk: its text, its file time and its frontmatter mapping (empty if none)."""

    doc_id: str
    path: str
    text: str
    mtime: datetime
    frontmatter: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    frontmatter_text: str | None = None
    """The frontmatter block as written when it could not be read as a mapping."""


def read_vault(root: Path, *, convention: LinkConvention | None = None) -> Iterator[Document | Problem]:
    """Every note under ``root`` as a Document (or a Problem), in path order.

    The whole vault is read before the first Document is yielded: links are resolved against all of
    its notes. ``convention`` overrides the detected reading of ``[[a|b]]``. A missing ``root`` raises
    ``SourceError`` at once, not on the first ``next()``. A ``root`` that is one note file
    (``.md``/``.markdown``) is a vault of that note alone in its folder: its doc id is its stem.
    """
    if root.is_file() and root.suffix.casefold() in NOTE_FILE_SUFFIXES:
        return _read_vault(root.parent, convention, [root.name])
    if not root.is_dir():
        raise SourceError(
            f"vault folder {shown_path(root)} does not exist or is not a folder, nor a note file "
            f"({', '.join(sorted(NOTE_FILE_SUFFIXES))})"
        )
    return _read_vault(root, convention, None)


def _read_vault(
    root: Path, convention: LinkConvention | None, paths: Sequence[str] | None
) -> Iterator[Document | Problem]:
    notes: list[NoteFile] = []
    # A note that cannot be read this time keeps its indexed chunks, so links to it still name it.
    unreadable: list[str] = []
    for path in note_paths(root) if paths is None else paths:
        loaded = load_note(root, path)
        if isinstance(loaded, Problem):
            unreadable.extend([note_id(path)] if is_text(path) else [])
            yield loaded
        else:
            notes.append(loaded)
    index = NoteIndex([*(note.doc_id for note in notes), *unreadable])
    chosen = convention or detect_convention(root, [note.frontmatter for note in notes])
    for note in notes:
        yield build_document(note, index, chosen)


def note_paths(root: Path) -> list[str]:
    """Vault-relative paths (forward slashes) of the notes under ``root``, sorted.

    A symbolic link to a folder outside the vault is followed, as Obsidian does; one to a folder inside the
    vault (its notes are read at their own path), to a folder holding the vault, or to a folder already
    read (a loop, or a second link to it; links are taken in name order) is not. A ``.md`` file that is a
    symbolic link to a file whose name is not a note's is not read either, with a warning: a vault from elsewhere
    could hold ``meeting.md -> ../../.ssh/id_ed25519``, whose text would go into the index.
    """
    found: list[str] = []
    vault = os.path.realpath(root)
    read: set[str] = set()
    for folder, subfolders, files in os.walk(root, followlinks=True):
        read.add(os.path.realpath(folder))
        subfolders[:] = [
            name
            for name in sorted(subfolders)
            if not _is_skipped(name) and _followed(os.path.join(folder, name), vault, read)
        ]
        relative = Path(folder).relative_to(root).as_posix()
        for name in files:
            if name.casefold().endswith(NOTE_SUFFIX) and not _is_skipped(name):
                path = name if relative == "." else f"{relative}/{name}"
                target = _other_than_a_note(os.path.join(folder, name))
                if target is None:
                    found.append(path)
                else:
                    warnings.warn(
                        f"{shown_escaped(path)}: a symbolic link to {shown_escaped(target)}, which is not a Markdown "
                        "note; not read",
                        EsbridgeWarning,
                        stacklevel=2,
                    )
    return sorted(found)


def _other_than_a_note(file: str) -> str | None:
    """The target of ``file`` when it is a symbolic link to a file whose name is not a note's, else None."""
    if not os.path.islink(file):
        return None
    target = os.path.realpath(file)
    return None if target.casefold().endswith(tuple(NOTE_FILE_SUFFIXES)) else target


def _followed(folder: str, vault: str, read: set[str]) -> bool:
    """Whether to walk ``folder``: yes unless it is a link into the vault, to a folder holding the vault (a
    loop), or to a folder already read or about to be (``read`` takes the target when the answer is yes)."""
    if not os.path.islink(folder):
        return True
    target = os.path.realpath(folder)
    if _within(target, vault) or _within(vault, target) or target in read:
        return False
    read.add(target)
    return True


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_FOLDERS


def load_note(root: Path, path: str) -> NoteFile | Problem:
    file = root / path
    if not is_text(path):  # the id would be too: no engine takes it, and one such id fails a whole request
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        reason = "the file name is not UTF-8, so it cannot be a document id; rename the file"
        return Problem(str(root / shown), reason, doc_id=note_id(shown))
    problem = refused_character(note_id(path))
    if problem is not None:  # shown escaped: printed as it is, the name could drive the terminal or read reversed
        shown = shown_escaped(path)
        return Problem(
            str(root / shown), f"the file name, the note's id, {problem}; rename the file", doc_id=note_id(path)
        )
    try:
        status = file.stat()
        if not stat.S_ISREG(status.st_mode):  # reading a named pipe waits for a writer that may never come
            reason = "not a regular file (a named pipe, socket or device); not read"
            return Problem(str(file), reason, doc_id=note_id(path))
        data = file.read_bytes()
        mtime = datetime.fromtimestamp(status.st_mtime, tz=timezone.utc)
    except OSError as exc:
        return Problem(str(file), f"cannot read the note: {exc.strerror or exc}", doc_id=note_id(path))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, reason = line_not_utf8(exc)
        return Problem(str(file), reason, line=line, doc_id=note_id(path))
    text, controls = without_controls(text)
    raw = read_frontmatter(text)
    frontmatter, warnings = load_frontmatter(raw) if raw is not None else ({}, [])
    unread = raw if raw is not None and warnings and warnings[0].startswith(UNREADABLE) else None
    if unread is not None:  # kept so what it says stays searchable
        warnings = [*warnings[:-1], f"{warnings[-1]}; its text is kept in metadata {FRONTMATTER_TEXT!r}"]
    warnings = [controls_warning(controls, "the note"), *warnings] if controls else warnings
    return NoteFile(note_id(path), path, text, mtime, frontmatter, tuple(warnings), unread)


def is_text(name: str) -> bool:
    """Whether a file name is UTF-8 text (undecodable bytes of a file name arrive as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes of a file name arrive as lone surrogates
        return False
    return True


def note_id(path: str) -> str:
    """A note's doc id: its vault-relative path without the extension (``a/b.c.md`` -> ``a/b.c``)."""
    return posixpath.splitext(path)[0]


def build_document(note: NoteFile, index: NoteIndex, convention: LinkConvention) -> Document:
    parsed = parse_note(note.text, lambda link: wikilink_label(link, convention))
    if convention == "obsidian":
        parsed = replace(parsed, references=(*frontmatter_wikilinks(note.frontmatter), *parsed.references))
    unread = {FRONTMATTER_TEXT: note.frontmatter_text} if note.frontmatter_text is not None else None
    front, meaning_warnings = interpret_frontmatter(unread or note.frontmatter)
    warnings = [*note.warnings, *meaning_warnings]
    if parsed.frontmatter_unclosed:
        warnings.append("frontmatter starts with '---' but has no closing '---'; read as text")
    title = front.title or parsed.first_h1 or posixpath.basename(note.doc_id)
    sections = parsed.sections
    if parsed.first_h1 is not None and title.casefold() == parsed.first_h1.casefold():
        sections = without_title_heading(sections, parsed.first_h1)
    tags = merge_tags(front.tags, parsed.tags)
    links, unresolved = resolve_links(parsed, note.doc_id, index, convention)
    if convention == "dendron":
        links = _unique([*links, *tag_note_links(tags, note.doc_id, index)], exclude=note.doc_id)
    metadata, replaced = with_computed(front.metadata, {"unresolved_links": list(unresolved)}, unit="note")
    return Document(
        doc_id=note.doc_id,
        title=title,
        sections=sections,
        path=note.path,
        tags=tags,
        aliases=tuple(dict.fromkeys(front.aliases)),
        links=links,
        entity_type=front.entity_type,
        status=front.status,
        category=front.category,
        created_at=front.created_at,
        modified_at=front.modified_at or note.mtime,
        metadata=metadata,
        warnings=(*warnings, *replaced),
    )


def frontmatter_wikilinks(value: Any) -> list[Wikilink]:
    """The wikilinks written in frontmatter values (``up: "[[Parent]]"``, ``related: ["[[a]]", "[[b]]"]``), which
    Obsidian counts as links of the note; they also stay in ``metadata`` as written."""
    if isinstance(value, str):
        return [parse_wikilink(inner, embed=bool(bang)) for bang, inner in _WIKILINK.findall(value) if inner.strip()]
    if isinstance(value, Mapping):
        return [link for item in value.values() for link in frontmatter_wikilinks(item)]
    if isinstance(value, (list, tuple)):
        return [link for item in value for link in frontmatter_wikilinks(item)]
    return []


def without_title_heading(sections: Sequence[Section], title_heading: str) -> tuple[Section, ...]:
    """The sections with the H1 that serves as the title taken off the front of their heading paths."""
    return tuple(
        replace(section, headings=section.headings[1:]) if section.headings[:1] == (title_heading,) else section
        for section in sections
    )


def merge_tags(*groups: Iterable[str]) -> tuple[str, ...]:
    """Tags without ``#``, in first-seen order, one per case-insensitive spelling."""
    seen: dict[str, str] = {}
    for group in groups:
        for tag in group:
            name = tag.strip().lstrip("#").strip()
            if name:
                seen.setdefault(name.casefold(), name)
    return tuple(seen.values())


def resolve_links(
    parsed: ParsedNote, doc_id: str, index: NoteIndex, convention: LinkConvention
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The doc ids the note links to and the targets that name no note, each deduplicated, in order."""
    resolved: list[str] = []
    unresolved: list[str] = []
    for reference in parsed.references:
        if isinstance(reference, Wikilink):
            found, missing = _resolve_wikilink(reference, doc_id, index, convention)
            if missing is not None and posixpath.splitext(missing)[1].casefold() in ATTACHMENT_SUFFIXES:
                missing = None
        else:
            found, missing = _resolve_markdown_link(reference, doc_id, index)
        if found is not None:
            resolved.append(found)
        elif missing is not None:
            unresolved.append(normalize_target(missing))
    # Targets are matched without regard to case, Unicode normalization or path spelling, so [[Beta]], [[./beta]]
    # and [b](beta.md) are one missing note, which a note named beta will resolve: the first spelling is kept.
    first_spelling = {fold(target): target for target in reversed(unresolved)}
    return _unique(resolved, exclude=doc_id), tuple(first_spelling[key] for key in dict.fromkeys(map(fold, unresolved)))


def _resolve_wikilink(
    link: Wikilink, doc_id: str, index: NoteIndex, convention: LinkConvention
) -> tuple[str | None, str | None]:
    conventional, other = wikilink_readings(link, convention)
    for reading in (conventional, other):
        found = index.resolve(reading, doc_id) if reading is not None else None
        if found is not None:
            return found, None
    return None, conventional


def _resolve_markdown_link(href: str, doc_id: str, index: NoteIndex) -> tuple[str | None, str | None]:
    target = markdown_link_target(href)
    if target is None:
        return None, None
    path, names_note = target
    found = index.resolve(path, doc_id)
    return found, (path if found is None and names_note else None)


def tag_note_links(tags: Iterable[str], doc_id: str, index: NoteIndex) -> list[str]:
    """Dendron's tag notes: ``#x`` links to ``tags.x``."""
    found = (index.resolve(f"tags.{tag}", doc_id) for tag in tags)
    return [doc for doc in found if doc is not None]


def _unique(items: Iterable[str], *, exclude: str | None) -> tuple[str, ...]:
    return tuple(item for item in dict.fromkeys(items) if item != exclude)
