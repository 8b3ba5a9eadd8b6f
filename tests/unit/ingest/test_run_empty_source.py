"""A source that gives no document is refused, naming what was looked for, and creates nothing: no empty index, no
alias. One that would empty a source the index holds is refused too, unless --allow-mass-delete says it is meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import SourceError
from esbridge.ingest.refusals import MassDeleteRefused
from esbridge.ingest.report import IngestReport
from esbridge.ingest.sources import SourceFormat
from tests.support.hashing import HashingEmbedder
from tests.support.ingest_runs import ingest_into


def run(engine: EmbeddedEngine, path: Path, source_format: SourceFormat = "auto", **options: object) -> IngestReport:
    return ingest_into(engine, "notes", path, source_format, **options)


def nothing_created(engine: EmbeddedEngine) -> bool:
    return engine.list_indices("*") == [] and engine.alias_targets("notes") == []


def test_a_folder_without_notes_is_refused_naming_what_was_looked_for(engine: EmbeddedEngine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("Buy panels.\n", encoding="utf-8")
    for source_format in ("auto", "markdown"):
        with pytest.raises(SourceError) as refused:
            run(engine, folder, source_format)
        assert str(refused.value) == (
            f"found no documents in {folder} (read as a Markdown vault: its .md notes); nothing was written"
        )
    assert nothing_created(engine)


def test_an_empty_jsonl_file_or_beir_corpus_is_refused(engine: EmbeddedEngine, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("\n\n", encoding="utf-8")
    with pytest.raises(SourceError, match="read as JSONL: one JSON record per line"):
        run(engine, records)
    beir = tmp_path / "scifact"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(SourceError, match=r"read as a BEIR corpus: the records of its corpus\.jsonl"):
        run(engine, beir)
    assert nothing_created(engine)


def test_a_folder_without_the_file_a_format_reads_is_refused(engine: EmbeddedEngine, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(SourceError, match="BEIR corpus not found"):
        run(engine, folder, "beir")
    with pytest.raises(SourceError, match="JSON-lines file is not a file"):
        run(engine, folder, "jsonl")
    assert nothing_created(engine)


def test_a_source_whose_every_record_fails_reports_them_and_creates_no_index(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n", encoding="utf-8")
    report = run(engine, broken)
    assert [failure["id"] for failure in report.failed] == ["broken.jsonl:1"]
    assert report.documents_indexed == 0
    assert nothing_created(engine)
    # The summary names the alias ("notes: 0 documents ..."): it must not read as an index that exists.
    assert report.warnings == [f"index notes was not created: no document of {broken} could be read"]


def test_emptying_a_source_the_index_holds_is_refused_and_deletes_nothing_until_allowed(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("panels", "wind"):
        (vault / f"{name}.md").write_text(f"# {name}\n\nNotes on {name}.\n", encoding="utf-8")
    assert run(engine, vault).documents_indexed == 2
    for note in vault.iterdir():
        note.unlink()

    with pytest.raises(MassDeleteRefused) as refused:
        run(engine, vault)
    assert str(refused.value) == (
        f"found no documents in {vault} (read as a Markdown vault: its .md notes); index notes-v1 holds 2 chunks "
        "for source 'vault', which this run would delete; nothing was written. Check the path (and --format); if "
        "the documents really were removed, run again with --allow-mass-delete to remove them from the index"
    )
    assert engine.count("notes") == 2

    assert run(engine, vault, max_delete_share=1.0).deleted == 2
    assert engine.count("notes") == 0


def test_an_empty_folder_for_a_source_the_index_does_not_hold_is_refused(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "panels.md").write_text("# Panels\n\nSix panels on the roof.\n", encoding="utf-8")
    run(engine, vault)
    empty = tmp_path / "other"
    empty.mkdir()
    for allowed in (0.5, 1.0):
        with pytest.raises(SourceError, match=r"found no documents in .*; nothing was written$"):
            run(engine, empty, max_delete_share=allowed)
    assert engine.count("notes") == 1


def test_the_command_exits_non_zero_naming_the_folder_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    env = {
        "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
        "ESBRIDGE_DATA_DIR": str(tmp_path / "data"),
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
    }
    folder = tmp_path / "notes"
    folder.mkdir()
    runner = CliRunner(env=env)

    result = runner.invoke(main, ["ingest", str(folder), "--format", "markdown", "--engine", "embedded"])

    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: found no documents in {folder} (read as a Markdown vault: its .md notes); nothing was written\n"
    )
    listed = runner.invoke(main, ["index", "list", "--json", "--engine", "embedded"])
    assert listed.exit_code == 0, listed.output
    assert (json.loads(listed.stdout)["current"], json.loads(listed.stdout)["versions"]) == (None, [])
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        assert engine.list_indices("*") == []
    finally:
        engine.close()
