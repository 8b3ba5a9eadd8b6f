"""Counts given on the command line are checked by click, before any work: a bad one is a usage error
naming the option, never a traceback or a silently different run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.engines.embedded import EmbeddedEngine
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder


@pytest.fixture
def notes(tmp_path: Path) -> list[str]:
    """The embedded engine's index ``notes`` with linked records; the options that reach it."""
    engine = EmbeddedEngine.from_settings(load_settings(index="notes"))
    load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    engine.close()
    return ["--engine", "embedded", "--index", "notes"]


@pytest.mark.parametrize(
    ("args", "option", "bound"),
    [
        (["graph", "stats", "--top", "-1"], "--top", "x>=0"),
        (["search", "solar", "--top-n", "0"], "--top-n", "x>=1"),
        (["demo", "--top-n", "-2"], "--top-n", "x>=1"),
        (["bench", ".", "--limit", "0"], "--limit", "x>=1"),
        (["bench", ".", "--limit", "-5"], "--limit", "x>=1"),
    ],
)
def test_counts_out_of_range_are_usage_errors(notes: list[str], args: list[str], option: str, bound: str) -> None:
    result = CliRunner().invoke(main, [*args, *notes])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert f"is not in the range {bound}" in result.output


def test_graph_stats_top_zero_lists_no_documents(notes: list[str]) -> None:
    result = CliRunner().invoke(main, ["graph", "stats", "--top", "0", "--json", *notes])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["nodes"] > 0
    assert (stats["top_degree"], stats["top_pagerank"]) == ([], [])


def test_index_drop_version_must_be_at_least_one_and_asks_about_that_version(notes: list[str]) -> None:
    runner = CliRunner()
    zero = runner.invoke(main, ["index", "drop", "--version", "0", *notes], input="y\n")
    assert zero.exit_code == 2, zero.output
    assert "Invalid value for '--version': 0 is not in the range x>=1" in zero.output
    assert "every version" not in zero.output
    current = runner.invoke(main, ["index", "drop", "--version", "1", *notes], input="y\n")
    assert "permanently delete version 1 of notes?" in current.output
    assert "notes-v1 is the current index of 'notes'" in current.output
    engine = EmbeddedEngine.from_settings(load_settings(index="notes"))
    try:
        assert engine.index_exists("notes-v1")
    finally:
        engine.close()


@pytest.mark.parametrize("command", ["search", "demo", "bench"])
def test_top_n_help_names_the_setting_that_bounds_it(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "at most the setting pipeline.top_n_max (default 50)" in " ".join(result.output.split())


@pytest.mark.parametrize("args", [["search", "solar"], ["demo"], ["bench", "."]], ids=lambda args: str(args[0]))
def test_top_n_above_the_setting_is_a_usage_error_naming_it(notes: list[str], args: list[str]) -> None:
    result = CliRunner().invoke(main, [*args, "--top-n", "51", *notes])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert errors == [
        "Error: Invalid value for '--top-n': 51 is more than the setting pipeline.top_n_max (50); "
        "raise that setting to ask for more"
    ]


def test_top_n_up_to_a_raised_setting_searches(
    notes: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    env = {
        "ESBRIDGE_PIPELINE__TOP_N_MAX": "60",
        "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
    }
    result = CliRunner(env=env).invoke(main, ["search", "solar", "--top-n", "51", "--json", *notes])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]


def test_a_search_without_top_n_answers_when_the_setting_is_below_its_default(
    notes: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    env = {
        "ESBRIDGE_PIPELINE__TOP_N_MAX": "2",
        "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
    }
    result = CliRunner(env=env).invoke(main, ["search", "solar", "--json", *notes])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["results"]) == 2
    asked = CliRunner(env=env).invoke(main, ["search", "solar", "--top-n", "3", *notes])
    assert asked.exit_code == 2
    assert "3 is more than the setting pipeline.top_n_max (2)" in asked.output
