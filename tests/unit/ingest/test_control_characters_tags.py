"""Control characters (NUL, escape, ...) in tags and aliases: replaced by spaces as in a title, with a warning naming
the record and the field, in a JSONL record, a registry record and a registry skill; stored values (a skill's fields
as given) kept as given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.sources import SourceFormat
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry


def replaced(count: int, where: str) -> str:
    return (
        f"{count} control character(s) (NUL or another C0 control) in {where} replaced by spaces; the text is "
        "otherwise indexed as written"
    )


def load(engine: EmbeddedEngine, path: Path, source_format: SourceFormat) -> IngestReport:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "tags", IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format=source_format, source="tags")
    report = ingest(path, engine=engine, manager=manager, embedder=embedder, options=options)
    engine.refresh("tags")
    return report


def stored(engine: EmbeddedEngine) -> dict[str, Mapping[str, Any]]:
    hits = engine.scan("tags", {"match_all": {}}, ["doc_id", "tags", "body", "metadata"], sort_field="chunk_id")
    return {hit.source["doc_id"]: hit.source for hit in hits}


def test_a_jsonl_records_tags_have_control_characters_replaced_with_a_warning_naming_the_record(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records = [
        {"id": "pumps", "title": "Pumps", "tags": ["pl\u0000ant", "valve\u001b", "water"]},
        {"id": "gauges", "title": "Gauges", "text": "Pressure.", "tags": "dial\u0007"},
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    report = load(engine, source, "jsonl")
    assert report.failed == []
    assert report.warnings == ["pumps: " + replaced(2, "field 'tags'"), "gauges: " + replaced(1, "field 'tags'")]
    documents = stored(engine)
    assert documents["pumps"]["tags"] == ["pl ant", "valve", "water"]
    assert documents["pumps"]["body"] == "Tags: pl ant, valve, water"
    assert documents["gauges"]["tags"] == ["dial"]


def test_a_registry_records_and_skills_tags_have_control_characters_replaced_on_every_document_they_tag(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"id": "pumps", "name": "Pumps", "tags": ["pl\u0000ant", "water"], "tools": ["reset"]},
        {"id": "valves", "name": "Valves", "tags": "va\u0007lve, water"},
        {
            "id": "travel",
            "name": "Travel",
            "tags": ["trips"],
            "skills": [{"id": "book", "name": "Book", "tags": ["a\u001bir"]}, {"id": "plan", "name": "Plan"}],
        },
    ]
    report = load(engine, write_registry(tmp_path, records), "registry")
    assert report.failed == []
    assert report.warnings == [
        "pumps: " + replaced(1, "field 'tags'"),
        "valves: " + replaced(1, "field 'tags'"),
        "travel/skills/book: " + replaced(1, "field 'tags'"),
    ]
    documents = stored(engine)
    assert {doc: list(hit["tags"]) for doc, hit in documents.items()} == {
        "pumps": ["pl ant", "water"],
        "pumps/tools/reset": ["pl ant", "water"],
        "valves": ["va lve", "water"],
        "travel": ["trips"],
        "travel/skills/book": ["a ir"],
        "travel/skills/plan": ["trips"],
    }
    assert documents["pumps"]["body"].startswith("Tags: pl ant, water\n")
    # The skill's fields as given are stored as given.
    assert documents["travel/skills/book"]["metadata"]["skill_fields"]["tags"] == ["a\u001bir"]


def test_a_jsonl_records_aliases_have_control_characters_replaced_with_a_warning_naming_the_field(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records = [
        {"id": "github", "title": "GitHub", "aliases": ["g\u0000h", "hub\u001b[31m"]},
        {"id": "gitlab", "title": "GitLab", "text": "Forge.", "aliases": "g\u0007l"},
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    report = load(engine, source, "jsonl")
    assert report.failed == []
    assert report.warnings == [
        "github: " + replaced(2, "field 'aliases'"),
        "gitlab: " + replaced(1, "field 'aliases'"),
    ]
    hits = engine.scan("tags", {"match_all": {}}, ["doc_id", "aliases"], sort_field="chunk_id")
    aliases = {hit.source["doc_id"]: list(hit.source["aliases"]) for hit in hits}
    assert aliases == {"github": ["g h", "hub [31m"], "gitlab": ["g l"]}
