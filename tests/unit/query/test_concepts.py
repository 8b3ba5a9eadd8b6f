from __future__ import annotations

from esbridge.query.concepts import concept_index_name, frequent_terms


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
