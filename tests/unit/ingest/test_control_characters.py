"""Control characters (NUL, bell, ...) in a note or a JSONL record: replaced by spaces, counted in a warning that
names the note or record, and nothing else of the text is lost."""

from __future__ import annotations

import json
from pathlib import Path

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.controls import without_controls
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.vaults import one_note, write_vault


def test_a_nul_in_a_note_becomes_a_space_and_the_run_names_the_note_and_the_count(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    # The Markdown parser turned NUL into U+FFFD without a word; the other control characters stayed, unsaid.
    vault = write_vault(tmp_path / "vault", {"logs/pump.md": "# Pump\n\nPressure\x00valve stuck.\x07 Reset\x00done.\n"})
    manager = IndexManager(engine, "notes", IndexParameters(dimension=HashingEmbedder().dimension))
    report = ingest(vault, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions())
    assert report.failed == []
    assert report.warnings == [
        "logs/pump.md: 3 control character(s) (NUL or another C0 control) in the note replaced by spaces; the text "
        "is otherwise indexed as written"
    ]
    engine.refresh("notes")
    [chunk] = engine.scan("notes", {"match_all": {}}, ["body"], sort_field="chunk_id")
    assert chunk.source["body"] == "Pressure valve stuck.  Reset done."
    found = engine.scan("notes", {"match": {"body": "valve"}}, ["doc_id"], sort_field="chunk_id")
    assert [hit.source["doc_id"] for hit in found] == ["logs/pump"]


def test_a_control_character_in_frontmatter_no_longer_costs_the_note_its_title_and_tags(tmp_path: Path) -> None:
    # YAML refuses control characters: the whole frontmatter was unreadable, kept only as text.
    doc = one_note(tmp_path, "---\ntitle: Pump\x01log\ntags: [plant]\n---\nBody.\n")
    assert (doc.title, doc.tags) == ("Pump log", ("plant",))
    assert "frontmatter_text" not in doc.metadata
    assert doc.warnings == (
        "1 control character(s) (NUL or another C0 control) in the note replaced by spaces; the text is otherwise "
        "indexed as written",
    )


def test_tabs_and_line_breaks_are_no_control_characters_to_replace(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "Col\tumn\r\nnext line\n")
    assert doc.sections[0].text == "Col\tumn\nnext line"
    assert doc.warnings == ()


def test_a_jsonl_records_text_fields_have_control_characters_replaced_with_a_warning_per_field(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    record = {"id": "r1", "title": "Pump\u0000log", "text": "Pressure\u0000valve\u0000stuck", "note": "a\u0000b"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    [doc] = list(read_jsonl(path))
    assert isinstance(doc, Document)
    assert (doc.title, doc.sections[0].text) == ("Pump log", "Pressure valve stuck")
    assert doc.metadata["note"] == "a\u0000b"  # metadata is stored as given
    assert doc.warnings == tuple(
        f"{count} control character(s) (NUL or another C0 control) in field {name!r} replaced by spaces; the text "
        "is otherwise indexed as written"
        for name, count in (("title", 1), ("text", 2))
    )


def test_control_characters_in_a_records_tools_and_fields_written_as_text_become_spaces_too(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    record = {
        "id": "srv",
        "name": "Pumps",
        "vendor": "Acme\u0000Pumps",
        "tools": [{"name": "t", "description": "a\u0007b"}],
    }
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    [doc] = list(read_jsonl(path))
    assert isinstance(doc, Document)
    assert [section.text for section in doc.sections] == ["vendor: Acme Pumps", "t: a b"]
    assert doc.warnings == (
        "2 control character(s) (NUL or another C0 control) in the text made of its tools or other fields replaced "
        "by spaces; the text is otherwise indexed as written",
    )
    assert doc.metadata["vendor"] == "Acme\u0000Pumps"
    assert doc.metadata["tool_records"] == [{"name": "t", "description": "a\u0007b"}]


def test_a_vertical_tab_or_form_feed_becomes_a_space_without_a_warning() -> None:
    # Pasted chat and word processors' line breaks: white space already, so nothing to warn about.
    assert without_controls("Reset\x0bthe pump.\x0cNext page\x00end") == ("Reset the pump. Next page end", 1)
    assert without_controls("line\x0bbreak") == ("line break", 0)
