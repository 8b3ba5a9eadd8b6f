from __future__ import annotations

from pathlib import Path

from esbridge.engines.base import BulkItemFailure
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.query.concepts import ConceptVocabulary, build_concept_index, concept_index_name, frequent_terms
from tests.support.hashing import HashingEmbedder


def test_frequent_terms_counts_documents_and_drops_stop_words() -> None:
    texts = [
        "Solar panels and solar cells",  # solar counts once per text
        "Wind turbines near the grid",
        "The grid carries solar power",
        "Sourdough",
        "",
    ]
    # solar: 2 texts, grid: 2 texts; everything else 1 text (below min_documents=2); "the"/"and" are stop words
    assert frequent_terms(texts, limit=10, min_documents=2) == ["grid", "solar"]
    assert frequent_terms(texts, limit=1, min_documents=2) == ["grid"]  # ties broken alphabetically
    assert "the" not in frequent_terms(texts, limit=50, min_documents=1)


def test_frequent_terms_of_nothing_is_nothing() -> None:
    assert frequent_terms([]) == []
    assert frequent_terms(["", "  "]) == []
    assert frequent_terms(["a an the"], min_documents=1) == []


def test_concept_index_sits_beside_the_alias() -> None:
    assert concept_index_name("notes") == "notes-concepts"


def test_a_term_the_model_sees_nothing_in_is_left_out_and_said(tmp_path: Path) -> None:
    # hashing-32 gives "++" a zero vector, which the engine refuses for cosine: before, it was refused and dropped
    # without a word.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        vocabulary = build_concept_index(engine, "notes", ["solar", "++", "grid"], HashingEmbedder())
        assert (vocabulary.written, vocabulary.unseen, vocabulary.refused) == (2, ("++",), ())
        assert engine.count(concept_index_name("notes")) == 2
        assert vocabulary.warnings("concepts of notes") == [
            "concepts of notes: 1 term(s) left out, the model sees nothing in them: ++"
        ]
    finally:
        engine.close()


def test_terms_the_engine_refuses_are_named_in_a_warning() -> None:
    refused = ConceptVocabulary(1, refused=(BulkItemFailure("grid", 400, "mapper_parsing_exception"),))
    assert refused.warnings("concepts of notes") == [
        "concepts of notes: the engine refused 1 term(s), left out of query expansion: grid (mapper_parsing_exception)"
    ]
    assert ConceptVocabulary(3).warnings("concepts of notes") == []
