"""BM25's length normalisation ``b`` on tantivy, whose own b is the constant 0.75.

BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009) saturates a term's
frequency against ``k1 * (1 - b + b * dl / avgdl)``, dl the document's length in the field and avgdl the mean.
tantivy computes it with b = 0.75 over the lengths it indexed. Every document that has the field is given ``P``
more tokens in it, each the empty string, which no query's analysis yields; then dl' = dl + P,
avgdl' = avgdl + P and, for every dl,

    0.25 + 0.75 * (dl + P) / (avgdl + P)  =  1 - b' + b' * dl / avgdl,   where b' = 0.75 * avgdl / (avgdl + P)

so ``P = avgdl * (0.75 / b - 1)`` makes tantivy score with the index's b exactly (k1 stays tantivy's 1.2). The
tokens are handed to tantivy already split, so they cost no analysis, and being empty they cost no copies of
their text either (half the ingest cost of a word; ``benchmarks/pad_tokens.py``).

avgdl is learnt once per field, from the first documents written that hold it (``Lengths.learn``), and kept in
the full-text directory's state: documents written later get the same P, as they must. If the field's mean
length later moves, b' moves with it (twice the length: 0.52 for a b of 0.4; half: 0.27). A b above 0.75 would
need fewer tokens than a document has and is scored as 0.75; a b below ``LOWEST_B`` as ``LOWEST_B``.
tantivy's avgdl counts every document, with the field or without, where Lucene's counts those with it, so on a
field most documents lack the two still differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tantivy

TANTIVY_B = 0.75
LOWEST_B = 0.05


def pad_length(mean_length: float, b: float) -> int:
    """The tokens that, added to every document's field of this mean length, turn tantivy's b into ``b``."""
    b = max(b, LOWEST_B)
    if b >= TANTIVY_B or mean_length <= 0:
        return 0
    return round(mean_length * (TANTIVY_B / b - 1.0))


def padding(tokens: int) -> tantivy.PreTokenizedString:
    """``tokens`` empty tokens, as tantivy takes text already split."""
    return tantivy.PreTokenizedString("", [tantivy.Token("", place, 0, 0) for place in range(tokens)])


class Lengths:
    """The mean lengths learnt for one full-text directory's fields, and the padding they give.

    ``learnt`` None: a directory written before padding existed, which keeps tantivy's b (its documents have no
    padding, and giving it to new documents only would rank the two sets differently)."""

    def __init__(self, b: float, learnt: Mapping[str, float] | None) -> None:
        self.b = b
        self.learnt = None if learnt is None else dict(learnt)
        self.pads: dict[str, tantivy.PreTokenizedString] = {}
        for name, mean in (self.learnt or {}).items():
            self._pad(name, mean)

    @classmethod
    def from_state(cls, state: Mapping[str, Any] | None, b: float) -> Lengths:
        """The lengths a directory's state records; a new directory (no state) learns them, with ``b``."""
        if state is None:
            return cls(b, {})
        learnt = state.get("lengths")
        if not isinstance(learnt, Mapping):
            return cls(TANTIVY_B, None)
        recorded = state.get("b")
        return cls(float(recorded) if isinstance(recorded, (int, float)) else b, learnt)

    def state(self) -> dict[str, Any]:
        """What the directory's state keeps of these (nothing for a directory that keeps tantivy's b)."""
        return {} if self.learnt is None else {"b": self.b, "lengths": dict(self.learnt)}

    def pending(self, names: list[str]) -> list[str]:
        """Which of the fields ``names`` still have their length to learn."""
        if self.learnt is None or max(self.b, LOWEST_B) >= TANTIVY_B:
            return []
        return [name for name in names if name not in self.learnt]

    def learn(self, counts: Mapping[str, tuple[int, int]]) -> bool:
        """Record each field's mean length from (documents with the field, their tokens); whether any was new."""
        assert self.learnt is not None
        new = False
        for name, (documents, tokens) in counts.items():
            if documents and name not in self.learnt:
                self.learnt[name] = tokens / documents
                self._pad(name, self.learnt[name])
                new = True
        return new

    def _pad(self, name: str, mean: float) -> None:
        tokens = pad_length(mean, self.b)
        if tokens:
            self.pads[name] = padding(tokens)
