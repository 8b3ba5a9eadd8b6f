"""A registry record's path: stripped with the id it stands in for, named when a duplicate id came from it, and
shown escaped (stored as given) when it holds a line break or another character that would split a report line."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EsbridgeWarning
from esbridge.ingest.markdown import note_paths
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry


def load(engine: EmbeddedEngine, path: Path) -> IngestReport:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "paths", IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="paths")
    report = ingest(path, engine=engine, manager=manager, embedder=embedder, options=options)
    engine.refresh("paths")
    return report


def stored(engine: EmbeddedEngine) -> dict[str, Mapping[str, Any]]:
    return {hit.source["doc_id"]: hit.source for hit in engine.search("paths", {"size": 100}).hits}


def test_a_spaced_path_standing_in_for_the_id_is_stored_stripped_as_the_id_is(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"path": " /time ", "name": "Clock", "tools": ["now"]},
        {"path": "\t/travel", "name": "Travel", "skills": [{"id": "book", "name": "Book"}]},
    ]
    source = write_registry(tmp_path, records)
    read = {doc.doc_id: doc for doc in read_registry(source) if isinstance(doc, Document)}
    assert (read["/time"].path, read["/time/tools/now"].metadata["server_path"]) == ("/time", "/time")
    assert (read["/travel"].path, read["/travel/skills/book"].metadata["agent_path"]) == ("/travel", "/travel")
    assert read["/time"].warnings == (
        "path ' /time ', standing in for the missing 'id', has spaces at either end: the id and the path are stored "
        "as '/time'",
    )
    report = load(engine, source)
    assert report.failed == []
    assert {doc: hit.get("path") for doc, hit in stored(engine).items()} == {
        "/time": "/time",
        "/time/tools/now": None,
        "/travel": "/travel",
        "/travel/skills/book": None,
    }


def test_a_second_ingest_of_spaced_path_made_ids_writes_and_embeds_nothing(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"path": " /time ", "name": "Clock", "tools": [" now "], "skills": [{"name": " Tell "}]},
        {"id": " spaced ", "path": " /spaced ", "name": "Spaced"},
    ]
    source = write_registry(tmp_path, records)
    first = load(engine, source)
    assert (first.chunks_indexed, first.embedded) == (4, 4)
    again = load(engine, source)
    assert (again.unchanged, again.chunks_indexed, again.embedded, again.from_cache, again.deleted) == (4, 0, 0, 0, 0)


def test_a_path_given_with_an_id_is_stored_as_given(tmp_path: Path) -> None:
    [server] = read_registry(write_registry(tmp_path, [{"id": "time", "path": " /time ", "name": "Clock"}]))
    assert isinstance(server, Document) and (server.doc_id, server.path, server.warnings) == ("time", " /time ", ())


def test_a_duplicate_id_says_which_came_from_a_path(engine: EmbeddedEngine, tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"path": "/x", "name": "X"},
        {"path": " /x", "name": "X again"},
        {"id": "/y", "name": "Y"},
        {"path": "/y", "name": "Y again"},
        {"path": "/z", "name": "Z"},
        {"id": "/z", "name": "Z again"},
        {"id": "w", "name": "W"},
        {"id": "w", "name": "W again"},
    ]
    source = write_registry(tmp_path, records)
    problems = [(item.line, item.reason) for item in read_registry(source) if isinstance(item, Problem)]
    assert problems == [
        (2, "duplicate id '/x' from field 'path', standing in for the missing 'id' (first on line 1, from its 'path' "
            "too); record skipped"),
        (4, "duplicate id '/y' from field 'path', standing in for the missing 'id' (first on line 3, as its 'id'); "
            "record skipped"),
        (6, "duplicate id '/z' (first on line 5, from its 'path' standing in for 'id'); record skipped"),
        (8, "duplicate id 'w' (first on line 7); record skipped"),
    ]  # fmt: skip
    report = load(engine, source)
    assert [failure["id"] for failure in report.failed] == [f"registry.jsonl:{line}" for line in (2, 4, 6, 8)]
    assert set(stored(engine)) == {"/x", "/y", "/z", "w"}


def test_a_record_whose_path_made_id_is_another_records_tool_says_it_came_from_the_path(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"path": "/a", "name": "A", "tools": ["t"]},
        {"path": "/a/tools/t", "name": "A server whose path looks like a tool's id"},
    ]
    *_, problem = read_registry(write_registry(tmp_path, records))
    assert isinstance(problem, Problem) and problem.reason == (
        "document id '/a/tools/t' (from field 'path', standing in for the missing 'id') is already the id of tool "
        "'t' of record '/a' (line 1, from its 'path'); record skipped (change one of the ids)"
    )


def test_a_path_with_a_line_break_is_shown_escaped_in_warnings_and_stored_as_given(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"id": "pumps", "path": "/pumps\nwarning: forged", "name": "Pumps\x00"},
        {"id": "flip", "path": "/flip\u202eevil", "name": "Flip\x00"},
    ]
    report = load(engine, write_registry(tmp_path, records))
    named = "1 control character(s) (NUL or another C0 control) in field 'name' replaced by spaces"
    assert [warning.split(":")[0] for warning in report.warnings if named in warning] == [
        "/pumps\\u000awarning",
        "/flip\\u202eevil",
    ]
    assert all("\n" not in warning and "\u202e" not in warning for warning in report.warnings)
    assert {doc: hit["path"] for doc, hit in stored(engine).items()} == {
        "pumps": "/pumps\nwarning: forged",
        "flip": "/flip\u202eevil",
    }


def test_a_record_refused_for_its_long_id_is_reported_under_its_path_escaped(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    long_id = "a" * 520
    report = load(engine, write_registry(tmp_path, [{"id": long_id, "path": "/a\r\nb", "name": "A"}]))
    assert [failure["id"] for failure in report.failed] == ["/a\\u000d\\u000ab"]
    assert report.failed[0]["reason"].startswith(f"chunk {long_id}#0: id is 522 bytes long")


def test_a_failure_in_a_file_whose_name_holds_a_line_break_names_it_escaped(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    source = tmp_path / "servers\nfailed: forged.jsonl"
    source.write_text(json.dumps({"id": "a", "name": "A"}) + "\nnot json\n", encoding="utf-8")
    report = load(engine, source)
    assert [failure["id"] for failure in report.failed] == ["servers\\u000afailed: forged.jsonl:2"]
    assert set(stored(engine)) == {"a"}


def test_a_note_linked_to_another_file_is_named_escaped_in_its_warning(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    secret = tmp_path / "key\u202e.txt"
    secret.write_text("secret", encoding="utf-8")
    os.symlink(secret, vault / "meeting\nwarning: forged.md")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert note_paths(vault) == []
    [warning] = [str(item.message) for item in caught if issubclass(item.category, EsbridgeWarning)]
    assert warning == (
        f"meeting\\u000awarning: forged.md: a symbolic link to {tmp_path.resolve()}/key\\u202e.txt, which is not a "
        "Markdown note; not read"
    )


@pytest.mark.parametrize(
    ("name", "shown"), [("a\nb", "a\\u000ab"), ("a\u2028b", "a\\u2028b"), ("a\x1b[2Jb", "a\\u001b[2Jb")]
)
def test_a_failure_names_its_file_escaped_whatever_character_would_split_or_garble_it(name: str, shown: str) -> None:
    problem = Problem(f"{name}.jsonl", "invalid JSON", 3)
    assert (problem.id, problem.source) == (f"{shown}.jsonl:3", f"{name}.jsonl")  # what it names is unchanged
