"""Cutting a Document into the Chunks that are indexed, for every source alike.

1. Consecutive sections are merged while one side is below ``min_tokens``, the two sit under the same
   parent heading (siblings, or a heading and its subsection) and the result fits in ``max_tokens``.
   The merged chunk keeps the common prefix of the heading paths; the headings below it are written
   into the body as lines, so no heading text is lost.
2. A section longer than ``max_tokens`` is cut into windows, preferring paragraph ends, then sentence
   ends (and line ends), then spaces; a single word longer than a window is cut anywhere. Each window
   after the first starts with the last ``overlap_tokens`` of the one before (whole sentences when
   they fit, else words).
3. A section's code goes with its first window only, so each code block is indexed once.

Chunk ``i`` has id ``chunk_id(doc_id, i)``; the same document and counter always give the same chunks.
A document without text still gives one chunk, with an empty body, so its title can be found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from esbridge.ids import chunk_id
from esbridge.ingest.model import Chunk, Document, Section
from esbridge.ingest.token_tally import SliceCounter, Tally, concat, spaced, tally, tally_tokens
from esbridge.ingest.token_tally import approximate_token_count as approximate_token_count

TokenCounter = Callable[[str], int]
M = TypeVar("M")

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_OR_LINE_BREAK = re.compile(r"((?<=[.!?…])[ \t]+|[ \t]*\n\s*)")


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


class _Counting(Protocol[M]):
    """How ``split_text`` measures texts: the measure of a text, of two joined, and the tokens it gives."""

    def measure(self, text: str) -> M: ...

    def join(self, left: M, joiner: str, right: M) -> M: ...

    def tokens(self, measure: M) -> int: ...

    def cut(self, word: str, max_tokens: int) -> list[tuple[str, M]]:
        """A word too long for a window in pieces of at most ``max_tokens``, with their measures."""
        ...

    def tail(self, window: str, budget: int) -> str:
        """The end of a window worth at most ``budget`` tokens: whole sentences if any fit, else words."""
        ...


@dataclass(slots=True)
class _Unit(Generic[M]):
    """A piece of text that stays whole in a window, what joins it to the piece before, and its measure."""

    text: str
    joiner: str
    measure: M


def split_text(text: str, max_tokens: int, overlap_tokens: int, count: TokenCounter) -> list[str]:
    """Windows of at most ``max_tokens`` covering ``text``, each overlapping the one before.

    With ``approximate_token_count`` (what ingest uses) a window's count follows from its pieces', so the
    time is linear in the text; any other counter, such as a model's tokenizer, is called on each window as
    it grows, since nothing is known of how its counts combine. Both give the same windows for the same counts.
    """
    if count(text) <= max_tokens:
        return [text]
    if count is approximate_token_count:
        return _windows(text, max_tokens, overlap_tokens, _TallyCounting())
    return _windows(text, max_tokens, overlap_tokens, _ExactCounting(count))


def _windows(text: str, max_tokens: int, overlap_tokens: int, counting: _Counting[M]) -> list[str]:
    windows: list[str] = []
    current: list[_Unit[M]] = []
    measure = counting.measure("")  # of the text of ``current``
    for unit in _units(text, max_tokens, counting):
        grown = counting.join(measure, unit.joiner, unit.measure) if current else unit.measure
        if current and counting.tokens(grown) > max_tokens:
            done = _join(current)
            windows.append(done)
            budget = min(overlap_tokens, max_tokens - counting.tokens(unit.measure))
            overlap = counting.tail(done, budget) if budget > 0 else ""
            current, measure = [unit], unit.measure
            if overlap:
                with_overlap = counting.join(counting.measure(overlap), unit.joiner, unit.measure)
                if counting.tokens(with_overlap) <= max_tokens:
                    current, measure = [_Unit(overlap, "", counting.measure(overlap)), unit], with_overlap
        else:
            current.append(unit)
            measure = grown
    if current:
        windows.append(_join(current))
    return windows


def _join(units: Sequence[_Unit[M]]) -> str:
    return units[0].text + "".join(unit.joiner + unit.text for unit in units[1:])


def _units(text: str, max_tokens: int, counting: _Counting[M]) -> Iterator[_Unit[M]]:
    """Paragraphs; sentences and lines of a paragraph too long for a window; words of such a sentence."""
    for index, paragraph in enumerate(p for p in _PARAGRAPH_BREAK.split(text.strip()) if p):
        joiner = "\n\n" if index else ""
        measure = counting.measure(paragraph)
        if counting.tokens(measure) <= max_tokens:
            yield _Unit(paragraph, joiner, measure)
            continue
        for sentence, sentence_joiner in _sentences(paragraph):
            joiner = joiner or sentence_joiner
            measure = counting.measure(sentence)
            if counting.tokens(measure) <= max_tokens:
                yield _Unit(sentence, joiner, measure)
            else:
                for word_index, word in enumerate(sentence.split()):
                    first = " " if word_index else joiner
                    for piece_index, (piece, piece_measure) in enumerate(counting.cut(word, max_tokens)):
                        yield _Unit(piece, "" if piece_index else first, piece_measure)
            joiner = ""


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


def _longest_prefix(length: int, fits: Callable[[int], bool]) -> int:
    """Binary search for the longest prefix that fits (1 when none does), as cutting a word always did."""
    low, high = 1, length
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _tail_sentences(window: str) -> list[str]:
    return [sentence for paragraph in _PARAGRAPH_BREAK.split(window) for sentence, _ in _sentences(paragraph)]


class _ExactCounting:
    """Any counter: each window is counted whole as it grows, which costs a count per unit."""

    def __init__(self, count: TokenCounter) -> None:
        self.count = count

    def measure(self, text: str) -> str:
        return text

    def join(self, left: str, joiner: str, right: str) -> str:
        return left + joiner + right

    def tokens(self, measure: str) -> int:
        return self.count(measure)

    def cut(self, word: str, max_tokens: int) -> list[tuple[str, str]]:
        pieces: list[tuple[str, str]] = []
        rest = word
        while rest:
            length = _longest_prefix(len(rest), lambda end: self.count(rest[:end]) <= max_tokens)  # noqa: B023
            pieces.append((rest[:length], rest[:length]))
            rest = rest[length:]
        return pieces

    def tail(self, window: str, budget: int) -> str:
        taken = ""
        for sentence in reversed(_tail_sentences(window)):
            candidate = f"{sentence} {taken}".strip()
            if self.count(candidate) > budget:
                break
            taken = candidate
        if taken:
            return taken
        words = window.split()
        for start in range(max(len(words) - budget, 0), len(words)):
            candidate = " ".join(words[start:])
            if self.count(candidate) <= budget:
                return candidate
        return ""


class _TallyCounting:
    """``approximate_token_count`` from tallies: a window's count follows from its units', so each text is
    read once. Gives the counts ``_ExactCounting`` would: stripping and joining with spaces adds no word or
    mark, and a prefix of a text never has more of either, so a word whose whole count fits is one piece."""

    def measure(self, text: str) -> Tally:
        return tally(text)

    def join(self, left: Tally, joiner: str, right: Tally) -> Tally:
        return concat(concat(left, tally(joiner)), right) if joiner.strip() else spaced(left, joiner, right)

    def tokens(self, measure: Tally) -> int:
        return measure.tokens

    def cut(self, word: str, max_tokens: int) -> list[tuple[str, Tally]]:
        whole = tally(word)
        if whole.tokens <= max_tokens:
            return [(word, whole)]
        slices = SliceCounter(word)
        pieces: list[tuple[str, Tally]] = []
        start = 0
        while start < len(word):
            length = _longest_prefix(
                len(word) - start,
                lambda end: slices.count(start, start + end) <= max_tokens,  # noqa: B023
            )
            pieces.append((word[start : start + length], tally(word[start : start + length])))
            start += length
        return pieces

    def tail(self, window: str, budget: int) -> str:
        taken, words, marks = "", 0, 0
        for sentence in reversed(_tail_sentences(window)):
            counts = tally(sentence)
            if tally_tokens(words + counts.words, marks + counts.marks) > budget:
                break
            taken = f"{sentence} {taken}".strip()
            words, marks = words + counts.words, marks + counts.marks
        if taken:
            return taken
        all_words = window.split()
        first = max(len(all_words) - budget, 0)
        suffixes: list[tuple[int, int]] = []  # words and marks of all_words[start:], for start from the end
        words, marks = 0, 0
        for word in reversed(all_words[first:]):
            counts = tally(word)
            words, marks = words + counts.words, marks + counts.marks
            suffixes.append((words, marks))
        for offset, (words, marks) in enumerate(reversed(suffixes)):
            if tally_tokens(words, marks) <= budget:
                return " ".join(all_words[first + offset :])
        return ""
