from __future__ import annotations

import pytest

from esbridge.ids import chunk_id, doc_id_of, first_chunk


def test_a_chunk_id_is_its_documents_id_and_position() -> None:
    assert chunk_id("notes/a.md", 3) == "notes/a.md#3"
    assert first_chunk("notes/a.md") == "notes/a.md#0"


@pytest.mark.parametrize(
    ("chunk", "document"),
    [
        ("notes/a.md#0", "notes/a.md"),
        ("notes/c#.md#12", "notes/c#.md"),  # a '#' inside the document id stays in it
        ("page#section#2", "page#section"),
        ("plain-id", "plain-id"),  # no position: the id is a document id
        ("anchor#intro", "anchor#intro"),  # what follows the last '#' is no position
    ],
)
def test_the_document_id_is_read_back_from_a_chunk_id(chunk: str, document: str) -> None:
    assert doc_id_of(chunk) == document


def test_reading_back_inverts_formatting() -> None:
    for document in ("a", "x#y", "dir/file.md", "#", ""):
        assert doc_id_of(chunk_id(document, 7)) == document


def test_a_hits_document_is_its_stored_doc_id_else_read_from_its_chunk_id() -> None:
    from esbridge.ids import document_of

    assert document_of("a#0", {"doc_id": "stored"}) == "stored"
    assert document_of("notes/a.md#3", {}) == "notes/a.md"
