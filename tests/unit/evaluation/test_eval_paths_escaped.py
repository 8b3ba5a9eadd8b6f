"""A dataset folder given to ``esbridge eval`` is named escaped in its errors: a line break, an escape sequence or a
right-to-left override in its name neither splits the error line nor drives the terminal nor shows the name
reversed, and bytes that are not UTF-8 are shown as ``\\xNN``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main

NAMES = [
    pytest.param("energy\nerror: forged\x1b[2J\u202e", "energy\\u000aerror: forged\\u001b[2J\\u202e", id="controls"),
    pytest.param(os.fsdecode(b"energy\xff"), "energy\\xff", id="not-utf-8"),
]


def evaluate(runner: CliRunner, folder: Path, *options: str) -> Result:
    return runner.invoke(main, ["eval", str(folder), "--methods", "bm25", "--engine", "embedded", *options])


def escaped_error(result: Result, raw: str, shown: str) -> str:
    assert result.exit_code in (1, 2), result.output
    assert shown in result.stderr
    assert raw not in result.stderr and "\x1b" not in result.stderr and "\u202e" not in result.stderr
    return result.stderr


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_dataset_folder_that_does_not_exist_is_named_escaped(
    runner: CliRunner, tmp_path: Path, name: str, shown: str
) -> None:
    stderr = escaped_error(evaluate(runner, tmp_path / name), name, shown)
    assert f"dataset folder not found: {tmp_path}/{shown}" in stderr


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_bad_query_line_names_the_queries_file_escaped(
    runner: CliRunner, energy: Path, tmp_path: Path, name: str, shown: str
) -> None:
    folder = energy.rename(tmp_path / name)
    (folder / "queries.jsonl").write_text('{"_id": "q1"}\n', encoding="utf-8")
    stderr = escaped_error(evaluate(runner, folder), name, shown)
    assert stderr.startswith(f"Error: {tmp_path}/{shown}/queries.jsonl, line 1: query 'q1' has no text, but ")


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_missing_and_unusable_judgements_name_the_qrels_file_escaped(
    runner: CliRunner, energy: Path, tmp_path: Path, name: str, shown: str
) -> None:
    folder = energy.rename(tmp_path / name)
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text("q1\tsolar\t0\n", encoding="utf-8")
    stderr = escaped_error(evaluate(runner, folder), name, shown)
    assert stderr.startswith(f"Error: {tmp_path}/{shown}/qrels/test.tsv judges no document relevant to any query")
    qrels.write_text("q1\tsolar\tnone\nq2\twind\tnone\n", encoding="utf-8")
    stderr = escaped_error(evaluate(runner, folder), name, shown)
    assert stderr == f"Error: {tmp_path}/{shown}/qrels/test.tsv, line 2: score 'none' is not an integer\n"
    qrels.unlink()
    stderr = escaped_error(evaluate(runner, folder), name, shown)
    assert stderr == f"Error: BEIR qrels file not found: {tmp_path}/{shown}/qrels/test.tsv\n"


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_corpus_emptied_since_its_ingest_is_named_escaped(
    runner: CliRunner, energy: Path, tmp_path: Path, name: str, shown: str
) -> None:
    folder = energy.rename(tmp_path / name)
    first = evaluate(runner, folder)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith(f"{shown} test: 2 queries on embedded index ")
    (folder / "corpus.jsonl").write_text("", encoding="utf-8")  # emptied since it was ingested
    stderr = escaped_error(evaluate(runner, folder), name, shown)
    assert f"{tmp_path}/{shown}/corpus.jsonl gave no document to evaluate on" in stderr


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_chart_in_a_folder_that_does_not_exist_is_named_escaped(
    runner: CliRunner, energy: Path, tmp_path: Path, name: str, shown: str
) -> None:
    chart = tmp_path / name / "chart.png"
    stderr = escaped_error(evaluate(runner, energy, "--plot", str(chart)), name, shown)
    assert f"cannot write chart {chart.parent.parent}/{shown}/chart.png: folder {tmp_path}/{shown} does not exist" in (
        " ".join(stderr.split())
    )


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_tune_names_a_settings_file_it_cannot_write_escaped(
    runner: CliRunner, energy: Path, tmp_path: Path, name: str, shown: str
) -> None:
    target = tmp_path / name / "esbridge.toml"
    result = runner.invoke(main, ["tune", str(energy), "--split", "test", "--output", str(target)])
    stderr = escaped_error(result, name, shown)
    assert stderr.splitlines(keepends=True)[-1] == (
        f"Error: cannot write settings file {tmp_path}/{shown}/esbridge.toml (--output): folder {tmp_path}/{shown} "
        "does not exist\n"
    )
