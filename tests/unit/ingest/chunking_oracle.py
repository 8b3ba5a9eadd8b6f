"""esbridge.ingest.chunking as it was before windows were counted from tallies: the oracle that the
faster chunking must match byte for byte (ids, bodies, order, overlaps). Kept verbatim; do not edit."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from esbridge.ids import chunk_id
from esbridge.ingest.model import Chunk, Document, Section

TokenCounter = Callable[[str], int]

_WORD = re.compile(r"\w+")
_MARK = re.compile(r"[^\w\s]")
_TOKENS_PER_WORD = 1.3
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_OR_LINE_BREAK = re.compile(r"((?<=[.!?…])[ \t]+|[ \t]*\n\s*)")


def approximate_token_count(text: str) -> int:
    """A word-piece estimate for when no tokenizer is at hand: 1.3 tokens per word, 1 per punctuation mark."""
    return math.ceil(len(_WORD.findall(text)) * _TOKENS_PER_WORD) + len(_MARK.findall(text))


def chunk_document(
    doc: Document,
    *,
    max_tokens: int,
    overlap_tokens: int,
    min_tokens: int,
    count_tokens: TokenCounter = approximate_token_count,
) -> list[Chunk]:
    if max_tokens < 1 or not 0 <= overlap_tokens < max_tokens or min_tokens < 0:
        raise ValueError(
            "chunking needs max_tokens >= 1, 0 <= overlap_tokens < max_tokens and min_tokens >= 0, got "
            f"max_tokens={max_tokens}, overlap_tokens={overlap_tokens}, min_tokens={min_tokens}"
        )
    pieces: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
    for group in merge_small_sections(doc.sections, max_tokens=max_tokens, min_tokens=min_tokens, count=count_tokens):
        windows = split_text(group.text, max_tokens, overlap_tokens, count_tokens)
        pieces.extend((group.headings, window, group.code if i == 0 else ()) for i, window in enumerate(windows))
    if not pieces:
        pieces.append(((), "", ()))
    return [
        Chunk(chunk_id(doc.doc_id, i), doc.doc_id, i, doc.title, body, headings, code, document=doc)
        for i, (headings, body, code) in enumerate(pieces)
    ]


@dataclass(frozen=True)
class SectionGroup:
    """Consecutive sections that become one chunk (or, when too long, one run of windows)."""

    members: tuple[Section, ...]

    @property
    def headings(self) -> tuple[str, ...]:
        return _common_prefix([member.headings for member in self.members])

    @property
    def text(self) -> str:
        depth = len(self.headings)
        parts: list[str] = []
        for member in self.members:
            parts.extend(part for part in (" > ".join(member.headings[depth:]), member.text) if part)
        return "\n\n".join(parts)

    @property
    def code(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(code for member in self.members for code in member.code))


def merge_small_sections(
    sections: Sequence[Section], *, max_tokens: int, min_tokens: int, count: TokenCounter
) -> list[SectionGroup]:
    groups: list[SectionGroup] = []
    for section in sections:
        if not (section.text.strip() or section.code or section.headings):
            continue
        if groups and _may_merge(groups[-1], section, max_tokens=max_tokens, min_tokens=min_tokens, count=count):
            groups[-1] = SectionGroup((*groups[-1].members, section))
        else:
            groups.append(SectionGroup((section,)))
    return groups


def _may_merge(group: SectionGroup, section: Section, *, max_tokens: int, min_tokens: int, count: TokenCounter) -> bool:
    path = group.headings
    shared = len(_common_prefix([path, section.headings]))
    if shared < max(len(path), len(section.headings)) - 1:
        return False
    if count(group.text) >= min_tokens and count(section.text) >= min_tokens:
        return False
    return count(SectionGroup((*group.members, section)).text) <= max_tokens


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        length = 0
        while length < min(len(prefix), len(path)) and prefix[length] == path[length]:
            length += 1
        prefix = prefix[:length]
    return prefix


@dataclass(frozen=True)
class _Unit:
    """A piece of text that stays whole in a window, and what joins it to the piece before."""

    text: str
    joiner: str


def split_text(text: str, max_tokens: int, overlap_tokens: int, count: TokenCounter) -> list[str]:
    """Windows of at most ``max_tokens`` covering ``text``, each overlapping the one before."""
    if count(text) <= max_tokens:
        return [text]
    windows: list[str] = []
    current: list[_Unit] = []
    for unit in _units(text, max_tokens, count):
        if current and count(_join([*current, unit])) > max_tokens:
            done = _join(current)
            windows.append(done)
            budget = min(overlap_tokens, max_tokens - count(unit.text))
            overlap = _tail(done, budget, count) if budget > 0 else ""
            current = [_Unit(overlap, ""), unit] if overlap else [unit]
            if len(current) > 1 and count(_join(current)) > max_tokens:
                current = [unit]
        else:
            current.append(unit)
    if current:
        windows.append(_join(current))
    return windows


def _join(units: Sequence[_Unit]) -> str:
    return units[0].text + "".join(unit.joiner + unit.text for unit in units[1:])


def _units(text: str, max_tokens: int, count: TokenCounter) -> list[_Unit]:
    """Paragraphs; sentences and lines of a paragraph too long for a window; words of such a sentence."""
    units: list[_Unit] = []
    for index, paragraph in enumerate(p for p in _PARAGRAPH_BREAK.split(text.strip()) if p):
        joiner = "\n\n" if index else ""
        if count(paragraph) <= max_tokens:
            units.append(_Unit(paragraph, joiner))
            continue
        for sentence, sentence_joiner in _sentences(paragraph):
            joiner = joiner or sentence_joiner
            if count(sentence) <= max_tokens:
                units.append(_Unit(sentence, joiner))
            else:
                for word_index, word in enumerate(sentence.split()):
                    units.extend(_cut_word(word, " " if word_index else joiner, max_tokens, count))
            joiner = ""
    return units


def _sentences(paragraph: str) -> list[tuple[str, str]]:
    """Sentences and lines of a paragraph with the joiner (space or newline) before each."""
    parts = _SENTENCE_OR_LINE_BREAK.split(paragraph)
    found: list[tuple[str, str]] = []
    joiner = ""
    for position, part in enumerate(parts):
        if position % 2:
            joiner = "\n" if "\n" in part else " "
        elif part:
            found.append((part, joiner))
    return found


def _cut_word(word: str, joiner: str, max_tokens: int, count: TokenCounter) -> list[_Unit]:
    pieces: list[_Unit] = []
    rest = word
    while rest:
        low, high = 1, len(rest)
        while low < high:
            middle = (low + high + 1) // 2
            if count(rest[:middle]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        pieces.append(_Unit(rest[:low], joiner if not pieces else ""))
        rest = rest[low:]
    return pieces


def _tail(window: str, budget: int, count: TokenCounter) -> str:
    """The end of a window worth at most ``budget`` tokens: whole sentences if any fit, else words."""
    sentences = [sentence for paragraph in _PARAGRAPH_BREAK.split(window) for sentence, _ in _sentences(paragraph)]
    taken = ""
    for sentence in reversed(sentences):
        candidate = f"{sentence} {taken}".strip()
        if count(candidate) > budget:
            break
        taken = candidate
    if taken:
        return taken
    words = window.split()
    for start in range(max(len(words) - budget, 0), len(words)):
        candidate = " ".join(words[start:])
        if count(candidate) <= budget:
            return candidate
    return ""
