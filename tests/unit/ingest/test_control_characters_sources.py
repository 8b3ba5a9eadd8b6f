"""Control characters (NUL, bell, ...) in a registry record or a BEIR corpus line: replaced by spaces in the text, with
the warning a note or a JSONL record gets, stored values kept as given; where such a value makes a document id (a
tool name, a skill id, a path standing in for an id) the line is refused instead, naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry


def replaced(count: int, where: str) -> str:
    return (
        f"{count} control character(s) (NUL or another C0 control) in {where} replaced by spaces; the text is "
        "otherwise indexed as written"
    )


REFUSED = "; ids must not hold control, line-separating or bidirectional formatting characters"
PUMPS: dict[str, Any] = {
    "id": "pumps",
    "path": "/pumps",
    "name": "Pump\u0000control",
    "description": "Reads\u0007pressure\u0000gauges.",
    "tags": ["plant"],
    "metadata": {"vendor": "Acme\u0000Pumps"},
    "tools": [{"name": "reset", "description": "Reset\u0000the valve"}],
}


def test_a_registry_records_control_characters_become_spaces_in_the_index_and_the_run_names_each_document(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    report = ingest(
        write_registry(tmp_path, [PUMPS]), engine=engine, manager=manager, embedder=embedder, options=options
    )
    assert report.failed == []
    assert sorted(report.warnings) == [
        "/pumps: " + replaced(1, "field 'name'"),
        "/pumps: " + replaced(2, "field 'description'"),
        "/pumps: " + replaced(2, "the text made of its tools, skills or other fields"),
        "pumps/tools/reset: " + replaced(1, "field 'description'"),
    ]
    engine.refresh("registry")
    hits = engine.scan("registry", {"match_all": {}}, ["doc_id", "title", "body", "metadata"], sort_field="chunk_id")
    stored = {hit.source["doc_id"]: hit.source for hit in hits}
    assert stored["pumps"]["title"] == "Pump control"
    assert stored["pumps"]["body"] == (
        "Reads pressure gauges.\n\nTags: plant\nvendor: Acme Pumps\n\nTools\n\nreset: Reset the valve"
    )
    assert stored["pumps/tools/reset"]["body"] == "Reset the valve"
    assert stored["pumps/tools/reset"]["metadata"]["server_name"] == "Pump control"
    # Stored values keep what was given.
    assert stored["pumps"]["metadata"]["vendor"] == "Acme\u0000Pumps"
    assert stored["pumps/tools/reset"]["metadata"]["tool_description"] == "Reset\u0000the valve"
    found = engine.scan("registry", {"match": {"body": "valve"}}, ["doc_id"], sort_field="chunk_id")
    assert [hit.source["doc_id"] for hit in found] == ["pumps", "pumps/tools/reset"]


def test_a_skills_name_and_description_are_cleaned_on_its_own_document_when_its_id_makes_the_document_id(
    tmp_path: Path,
) -> None:
    agent = {
        "id": "travel",
        "name": "Travel",
        "skills": [{"id": "book", "name": "Book\u0000flight", "description": "Books\u001ba seat", "tags": ["air"]}],
    }
    entity, skill = read_registry(write_registry(tmp_path, [agent]))
    assert isinstance(entity, Document) and isinstance(skill, Document)
    assert [section.text for section in entity.sections] == ["Book flight: Books a seat"]
    assert entity.warnings == (replaced(2, "the text made of its tools, skills or other fields"),)
    assert (skill.doc_id, skill.title, skill.sections[0].text) == ("travel/skills/book", "Book flight", "Books a seat")
    assert skill.metadata["skill_name"] == "Book flight"
    assert skill.metadata["skill_description"] == "Books\u001ba seat"
    assert skill.warnings == (replaced(1, "field 'name'"), replaced(1, "field 'description'"))


def test_what_makes_a_registry_document_id_is_refused_when_it_holds_a_character_no_id_may_hold(tmp_path: Path) -> None:
    # Each made a document id holding the character, as no JSONL id or note path may.
    records: list[dict[str, Any]] = [
        {"id": "s1", "name": "S1", "tools": [{"name": "re\u0000set"}]},
        {"id": "a1", "name": "A1", "skills": [{"id": "bo\u202eok", "name": "Book"}]},
        {"id": "a2", "name": "A2", "skills": [{"name": " Bo\u0007ok"}]},
        {"path": "/pu\u001bmps", "name": "Pumps"},
        {"id": "s2", "name": "S2", "tools": ["fetch\t"]},  # a tab at either end is stripped, not refused
    ]
    *problems, server, tool = read_registry(write_registry(tmp_path, records))
    assert [(problem.line, problem.reason) for problem in problems if isinstance(problem, Problem)] == [
        (
            1,
            f"field 'tools[0].name': makes a document id and holds the control character U+0000 at position 2{REFUSED}",
        ),
        (
            2,
            "field 'skills[0].id': makes a document id and holds the bidirectional formatting character U+202E "
            f"(RIGHT-TO-LEFT OVERRIDE) at position 2{REFUSED}",
        ),
        (
            3,
            "field 'skills[0]': its name, standing in for the missing 'id', makes a document id and holds the "
            f"control character U+0007 at position 3{REFUSED}",
        ),
        (
            4,
            "field 'path', standing in for the missing 'id': holds the control character U+001B at position 3"
            f"{REFUSED}",
        ),
    ]
    assert [problem.doc_id for problem in problems if isinstance(problem, Problem)] == ["s1", "a1", "a2", None]
    assert (server.doc_id, tool.doc_id) == ("s2", "s2/tools/fetch")


def test_a_beir_corpus_lines_title_and_text_have_control_characters_replaced_with_a_warning_per_field(
    tmp_path: Path,
) -> None:
    lines = [
        {
            "_id": "d1",
            "title": "Pump\u0000log",
            "text": "Pressure\u0000valve\u0007stuck.",
            "metadata": {"n": "a\u0000b"},
        },
        {"_id": "d2", "title": "Clean", "text": "Line one.\u000bLine two."},
    ]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    first, second = read_beir_corpus(tmp_path)
    assert isinstance(first, Document) and isinstance(second, Document)
    assert (first.title, first.sections[0].text) == ("Pump log", "Pressure valve stuck.")
    assert first.metadata["n"] == "a\u0000b"
    assert first.warnings == (replaced(1, "field 'title'"), replaced(2, "field 'text'"))
    assert (second.sections[0].text, second.warnings) == ("Line one. Line two.", ())
