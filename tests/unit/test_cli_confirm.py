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
