"""The approximate token count, and the tallies that give it for a joined text without reading the text again.

``approximate_token_count(text)`` reads two things: the runs of word characters (``\\w+``) and the marks
(characters neither word nor space). A run counts one word per ``WORD_CHARACTERS`` characters, started: prose
has no word that long, so a longer run is data (a hash, base64, a packed identifier), and counting it
as one word would let a single 400,000-character run pass for 2 tokens and never be cut. A join ``a + b``
has the marks of both, and the runs of both, except that when ``a`` ends and ``b`` begins with a word
character the two runs become one. A ``Tally`` keeps the counts with the lengths of the first and last
runs, so the count of a long window follows from its pieces'.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import NamedTuple

_WORD = re.compile(r"\w+")
_MARK = re.compile(r"[^\w\s]")
_TOKENS_PER_WORD = 1.3
# The longest run of word characters that counts as one word. The shared corpora's longest is 64 (a hash
# in the Dendron vault), so none of their chunks changed when longer runs began to count by length.
WORD_CHARACTERS = 64


def approximate_token_count(text: str) -> int:
    """A word-piece estimate for when no tokenizer is at hand: 1.3 tokens per word (a run of word characters,
    one word per ``WORD_CHARACTERS`` of it), 1 per punctuation mark."""
    return tally_tokens(_words(text, _WORD.findall(text)), len(_MARK.findall(text)))


def _words(text: str, runs: list[str]) -> int:
    """The words of ``text``, whose runs of word characters are ``runs``."""
    if len(text) <= WORD_CHARACTERS or max(map(len, runs), default=0) <= WORD_CHARACTERS:
        return len(runs)
    return sum(map(run_words, map(len, runs)))


def run_words(length: int) -> int:
    """The words a run of ``length`` word characters counts as."""
    return -(-length // WORD_CHARACTERS)


def tally_tokens(words: int, marks: int) -> int:
    return math.ceil(words * _TOKENS_PER_WORD) + marks


class Tally(NamedTuple):
    """What ``approximate_token_count`` reads from a text, and the runs of word characters it starts and ends
    with (their lengths, 0 when it starts or ends otherwise; ``one_run`` when the text is a single run)."""

    words: int
    marks: int
    head: int
    tail: int
    one_run: bool
    empty: bool

    @property
    def tokens(self) -> int:
        return tally_tokens(self.words, self.marks)


EMPTY = Tally(0, 0, 0, 0, False, True)


def tally(text: str) -> Tally:
    if not text:
        return EMPTY
    if text.isalnum():  # str.isalnum is the test re uses for \w (with "_"): one run, no marks
        return Tally(run_words(len(text)), 0, len(text), len(text), True, False)
    runs = _WORD.findall(text)
    head = len(runs[0]) if _WORD.match(text[0]) else 0
    tail = len(runs[-1]) if _WORD.match(text[-1]) else 0
    return Tally(_words(text, runs), len(_MARK.findall(text)), head, tail, head == len(text), False)


def concat(left: Tally, right: Tally) -> Tally:
    """The tally of the two texts joined with nothing between them."""
    if left.empty:
        return right
    if right.empty:
        return left
    if not (left.tail and right.head):
        return Tally(left.words + right.words, left.marks + right.marks, left.head, right.tail, False, False)
    joined = left.tail + right.head
    words = left.words + right.words - run_words(left.tail) - run_words(right.head) + run_words(joined)
    return Tally(
        words,
        left.marks + right.marks,
        joined if left.one_run else left.head,
        joined if right.one_run else right.tail,
        left.one_run and right.one_run,
        False,
    )


def spaced(left: Tally, space: str, right: Tally) -> Tally:
    """The tally of ``left + space + right`` for a ``space`` of whitespace only (which joins no runs)."""
    if not space:
        return concat(left, right)
    return Tally(left.words + right.words, left.marks + right.marks, left.head, right.tail, False, False)


class SliceCounter:
    """``approximate_token_count(text[start:end])`` in logarithmic time, for cutting one long word many times."""

    def __init__(self, text: str) -> None:
        runs = [match.span() for match in _WORD.finditer(text)]
        self._starts = [start for start, _ in runs]
        self._ends = [end for _, end in runs]
        self._words_before = list(accumulate((run_words(end - start) for start, end in runs), initial=0))
        self._marks = [match.start() for match in _MARK.finditer(text)]

    def count(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        # runs that reach into [start, end): from the first ending after start to the last starting before end
        first, last = bisect_right(self._ends, start), bisect_left(self._starts, end) - 1
        words = 0
        if first <= last:
            words = self._words_before[last + 1] - self._words_before[first]
            for index in {first, last}:  # the runs at either edge count only their part inside
                run_start, run_end = self._starts[index], self._ends[index]
                inside = min(run_end, end) - max(run_start, start)
                words += run_words(inside) - run_words(run_end - run_start)
        return tally_tokens(words, bisect_left(self._marks, end) - bisect_left(self._marks, start))
