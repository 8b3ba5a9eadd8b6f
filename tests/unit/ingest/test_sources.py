from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.errors import SourceError
from esbridge.ingest.model import Document
from esbridge.ingest.sources import detect_format, read_source


@pytest.mark.parametrize(
    ("name", "expected"),
    [("note.md", "markdown"), ("note.Markdown", "markdown"), ("records.jsonl", "jsonl"), ("records.ndjson", "jsonl")],
)
def test_a_file_s_format_follows_its_extension(tmp_path: Path, name: str, expected: str) -> None:
    (tmp_path / name).write_text("", encoding="utf-8")
    assert detect_format(tmp_path / name) == expected


def test_a_file_of_another_kind_needs_a_format(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    with pytest.raises(SourceError, match=r"cannot tell the format.*pass --format markdown, jsonl, beir or registry"):
        detect_format(tmp_path / "notes.txt")


def test_a_single_note_is_read_by_detection_and_by_name(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text("# Note\n\nBody.\n", encoding="utf-8")
    for source_format in ("auto", "markdown"):
        [document] = list(read_source(tmp_path / "note.md", source_format))
        assert isinstance(document, Document)
        assert document.doc_id == "note"


@pytest.mark.parametrize("present", ["queries.jsonl", "qrels", "corpus.jsonl.gz"])
def test_a_beir_folder_without_its_corpus_is_not_read_as_an_empty_vault(tmp_path: Path, present: str) -> None:
    if present == "qrels":
        (tmp_path / present).mkdir()
    else:
        (tmp_path / present).write_bytes(b"")
    with pytest.raises(SourceError, match=r"no corpus\.jsonl"):
        detect_format(tmp_path)
    with pytest.raises(SourceError, match=r"no corpus\.jsonl"):
        read_source(tmp_path)
    assert list(read_source(tmp_path, "markdown")) == []
