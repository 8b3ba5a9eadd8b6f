from __future__ import annotations

import re

import pytest

from esbridge.ids import chunk_id, doc_id_of, first_chunk
from esbridge.ingest.beir import BeirRecord
from esbridge.ingest.json_lines import record_id
from esbridge.ingest.jsonl import JsonlRecord


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


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("a\x00b", "the control character U+0000 at position 1"),
        ("two\nlines", "the control character U+000A at position 3"),
        ("x\x85y", "the control character U+0085 at position 1"),
        ("  pad\x7f", "the control character U+007F at position 5"),  # counted in the id as given, before trimming
        (
            "invoice\u202egpj.exe",
            "the bidirectional formatting character U+202E (RIGHT-TO-LEFT OVERRIDE) at position 7",
        ),
        ("a\u2066b\u2069", "the bidirectional formatting character U+2066 (LEFT-TO-RIGHT ISOLATE) at position 1"),
        ("a\u200fb", "the bidirectional formatting character U+200F (RIGHT-TO-LEFT MARK) at position 1"),
        ("a\u2028b", "the separator U+2028 (LINE SEPARATOR) at position 1"),
    ],
)
def test_ids_holding_control_or_bidi_characters_are_refused_naming_the_code_point_not_the_character(
    given: str, named: str
) -> None:
    with pytest.raises(ValueError, match="ids must not hold") as refused:
        record_id(given)
    assert f"holds {named};" in str(refused.value)
    assert all(char.isprintable() for char in str(refused.value))
    # One rule for every source of ids: JSONL and BEIR records as the sidecar's upserts read them.
    for read in (lambda: JsonlRecord.model_validate({"id": given}), lambda: BeirRecord.model_validate({"_id": given})):
        with pytest.raises(ValueError, match=re.escape(f"holds {named};")):
            read()


@pytest.mark.parametrize(
    "given", ["caf\u00e9", "cafe\u0301", "\u05e9\u05dc\u05d5\u05dd", "family \U0001f468\u200d\U0001f467", " trimmed\n"]
)
def test_ids_of_any_script_joiners_and_combining_marks_are_kept(given: str) -> None:
    assert record_id(given) == given.strip()
