"""The approximate token count, and the tallies that give it for a joined text without reading the text again.

``approximate_token_count(text)`` reads two things: the runs of word characters (``\\w+``) and the marks
(characters neither word nor space). A join ``a + b`` has the marks of both, and the runs of both less one
when ``a`` ends and ``b`` begins with a word character (the two runs become one). A ``Tally`` keeps the
counts with the first and last characters' kind, so the count of a long window follows from its pieces'.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from typing import NamedTuple

_WORD = re.compile(r"\w+")
_MARK = re.compile(r"[^\w\s]")
_TOKENS_PER_WORD = 1.3


def approximate_token_count(text: str) -> int:
    """A word-piece estimate for when no tokenizer is at hand: 1.3 tokens per word, 1 per punctuation mark."""
    return tally_tokens(len(_WORD.findall(text)), len(_MARK.findall(text)))


def tally_tokens(words: int, marks: int) -> int:
    return math.ceil(words * _TOKENS_PER_WORD) + marks


class Tally(NamedTuple):
    """What ``approximate_token_count`` reads from a text, and whether it starts and ends in a word."""

    words: int
    marks: int
    starts_in_word: bool
    ends_in_word: bool
    empty: bool

    @property
    def tokens(self) -> int:
        return tally_tokens(self.words, self.marks)


EMPTY = Tally(0, 0, False, False, True)
_ONE_WORD = Tally(1, 0, True, True, False)


def tally(text: str) -> Tally:
    if not text:
        return EMPTY
    if text.isalnum():  # str.isalnum is the test re uses for \w (with "_"): one run, no marks
        return _ONE_WORD
    return Tally(
        len(_WORD.findall(text)),
        len(_MARK.findall(text)),
        _WORD.match(text[0]) is not None,
        _WORD.match(text[-1]) is not None,
        False,
    )


def concat(left: Tally, right: Tally) -> Tally:
    """The tally of the two texts joined with nothing between them."""
    if left.empty:
        return right
    if right.empty:
        return left
    merged = 1 if left.ends_in_word and right.starts_in_word else 0
    return Tally(
        left.words + right.words - merged, left.marks + right.marks, left.starts_in_word, right.ends_in_word, False
    )


def spaced(left: Tally, space: str, right: Tally) -> Tally:
    """The tally of ``left + space + right`` for a ``space`` of whitespace only (which joins no runs)."""
    if not space:
        return concat(left, right)
    return Tally(
        left.words + right.words,
        left.marks + right.marks,
        left.starts_in_word and not left.empty,
        right.ends_in_word and not right.empty,
        False,
    )


class SliceCounter:
    """``approximate_token_count(text[start:end])`` in logarithmic time, for cutting one long word many times."""

    def __init__(self, text: str) -> None:
        runs = [match.span() for match in _WORD.finditer(text)]
        self._starts = [start for start, _ in runs]
        self._ends = [end for _, end in runs]
        self._marks = [match.start() for match in _MARK.finditer(text)]

    def count(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        # runs that reach into [start, end): those starting before end, less those ending by start
        words = bisect_left(self._starts, end) - bisect_right(self._ends, start)
        return tally_tokens(words, bisect_left(self._marks, end) - bisect_left(self._marks, start))
