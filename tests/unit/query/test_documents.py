"""Document-level fusion: runs reduced to one entry per document (hand-checked)."""

from __future__ import annotations

from esbridge.query.documents import per_document
from esbridge.query.fusion.linear import linear

DOC_OF = {"a#0": "a", "a#1": "a", "b#0": "b", "b#1": "b", "c#0": "c"}


def test_each_document_once_per_run_under_its_best_ranked_chunk() -> None:
    runs = {
        "bm25": {"a#1": 9.0, "b#0": 7.0, "a#0": 5.0, "c#0": 1.0},
        "knn": {"a#0": 0.9, "b#1": 0.8, "b#0": 0.7},
    }
    reduced = per_document(runs, DOC_OF)
    # a: best ranks a#1 (bm25 rank 1) and a#0 (knn rank 1) tie at rank 1; the earlier run (bm25) wins -> a#1.
    # b: b#0 is rank 2 in bm25, b#1 rank 2 in knn -> tie, bm25 wins -> b#0.
    assert reduced == {
        "bm25": {"a#1": 9.0, "b#0": 7.0, "c#0": 1.0},
        "knn": {"a#1": 0.9, "b#0": 0.8},
    }
    assert list(reduced["bm25"]) == ["a#1", "b#0", "c#0"]


def test_fusion_then_combines_evidence_from_different_chunks_of_a_document() -> None:
    runs = {"bm25": {"a#0": 10.0, "b#0": 5.0, "c#0": 0.0}, "knn": {"b#0": 0.9, "a#1": 0.8, "c#0": 0.1}}
    chunk_level = linear(runs).scores
    document_level = linear(per_document(runs, DOC_OF)).scores
    # Chunk level: a#0 = 1.0 (bm25 only), a#1 = 0.875 (knn only), b#0 = 0.5 + 1.0 = 1.5 wins.
    assert max(chunk_level, key=chunk_level.__getitem__) == "b#0"
    # Document level: a = 1.0 + 0.875 = 1.875 beats b = 0.5 + 1.0.
    assert document_level == {"a#0": 1.875, "b#0": 1.5, "c#0": 0.0}


def test_ids_without_a_document_are_their_own_document() -> None:
    assert per_document({"bm25": {"x": 1.0, "y": 0.5}}, {}) == {"bm25": {"x": 1.0, "y": 0.5}}
