"""Destructive commands ask first; no answer at all (a closed stdin, e.g. in a script) is a no."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder

NOTES = ["--engine", "embedded", "--index", "notes"]


def versions() -> list[str]:
    engine = EmbeddedEngine.from_settings(load_settings(index="notes"))
    try:
        return [info.name for info in engine.list_indices("notes*")]
    finally:
        engine.close()


@pytest.fixture(autouse=True)
def notes(tmp_path: Path) -> None:
    engine = EmbeddedEngine.from_settings(load_settings(index="notes"))
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    engine.close()


@pytest.mark.parametrize("answer", ["", "n\n", "\n"])
def test_no_answer_or_no_cancels_and_changes_nothing(answer: str) -> None:
    result = CliRunner().invoke(main, ["index", "drop", *NOTES], input=answer)
    assert result.exit_code == 1, result.output
    assert "Error: cancelled; nothing was changed (pass --yes to skip this question)" in result.output
    assert "Aborted!" not in result.output
    assert versions() == ["notes-v1"]


def test_yes_deletes() -> None:
    result = CliRunner().invoke(main, ["index", "drop", *NOTES], input="y\n")
    assert result.exit_code == 0, result.output
    assert versions() == []


@pytest.mark.parametrize("target", [["--index", "absent"], ["--index", "notes", "--version", "7"]])
def test_nothing_to_delete_is_said_without_asking(target: list[str]) -> None:
    result = CliRunner().invoke(main, ["index", "drop", "--engine", "embedded", *target], input="")
    assert result.exit_code == 0, result.output
    assert "nothing to delete" in result.output and "permanently delete" not in result.output
    assert versions() == ["notes-v1"]


def test_apply_with_only_fields_of_the_live_index_names_them_instead_of_saying_it_matches() -> None:
    engine = EmbeddedEngine.from_settings(load_settings(index="notes"))
    try:
        engine.put_mapping("notes-v1", {"added_by_hand": {"type": "keyword"}})
    finally:
        engine.close()
    result = CliRunner(env={"ESBRIDGE_EMBEDDING__DIMENSION": "32"}).invoke(main, ["mapping", "apply", *NOTES, "--yes"])
    assert result.exit_code == 0, result.output
    assert "added_by_hand" in result.output and "matches" not in result.output


def test_apply_of_another_vector_dimension_points_to_a_new_index_when_this_one_holds_vectors() -> None:
    """A reindex copies vectors as they are: it moves an empty index to another dimension, not one holding vectors."""
    result = CliRunner(env={"ESBRIDGE_EMBEDDING__DIMENSION": "8"}).invoke(main, ["mapping", "apply", *NOTES, "--yes"])
    assert result.exit_code == 1
    assert "needs a new index version" in result.output
    assert "--index NAME" in result.output and "index reindex`" not in result.output
