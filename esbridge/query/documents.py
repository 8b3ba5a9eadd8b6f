"""Document-level fusion: each retriever's run reduced to one entry per document before fusing.

Chunk-level fusion adds a chunk's BM25 score to the same chunk's kNN score; when a document's best
lexical match and best semantic match are different chunks, neither chunk gets both. Reducing each run
to its best chunk per document (max-pooling, as BEIR-style evaluation of passages does) and letting one
chunk stand for the document in every run makes fusion combine evidence per document.
"""

from __future__ import annotations

from collections.abc import Mapping

from esbridge.query.types import Runs


def per_document(runs: Runs, doc_of: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """``runs`` with each document once per run (its best-ranked chunk's score), keyed by one chunk id.

    The chunk that stands for a document is its best-ranked chunk over all runs (the earlier run wins a
    tie), so the same id carries the document's score in every run. Order within each run is kept.
    Ids missing from ``doc_of`` are their own document.
    """
    best: dict[str, tuple[int, str]] = {}
    reduced: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        kept: dict[str, float] = {}
        for rank, (item, score) in enumerate(run.items(), start=1):
            document = doc_of.get(item, item)
            if document in kept:
                continue
            kept[document] = score
            if document not in best or rank < best[document][0]:
                best[document] = (rank, item)
        reduced[name] = kept
    return {name: {best[document][1]: score for document, score in kept.items()} for name, kept in reduced.items()}
