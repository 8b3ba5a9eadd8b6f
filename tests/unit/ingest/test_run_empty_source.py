"""An ingest that finds nothing to read says so, rather than reporting 0 documents as if that were the source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.sources import SourceFormat
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def run(engine: EmbeddedEngine, path: Path, source_format: SourceFormat = "auto") -> IngestReport:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension))
    return ingest(
        path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source_format=source_format)
    )


def test_a_folder_without_notes_is_a_warning_naming_what_was_looked_for(engine: EmbeddedEngine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("Buy panels.\n", encoding="utf-8")
    report = run(engine, folder)
    assert report.documents_indexed == 0 and not report.failed
    assert report.warnings == [f"found no documents in {folder} (read as a Markdown vault: its .md notes)"]


def test_an_empty_jsonl_file_is_a_warning(engine: EmbeddedEngine, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("", encoding="utf-8")
    assert run(engine, path).warnings == [f"found no documents in {path} (read as jsonl)"]


def test_a_source_with_documents_or_failures_gives_no_such_warning(engine: EmbeddedEngine, tmp_path: Path) -> None:
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "panels.md").write_text("# Panels\n\nSix panels on the roof.\n", encoding="utf-8")
    assert run(engine, notes).warnings == []
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n", encoding="utf-8")
    report = run(engine, broken)
    assert report.failed and not any("found no documents" in warning for warning in report.warnings)
