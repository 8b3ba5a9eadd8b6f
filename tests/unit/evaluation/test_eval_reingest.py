"""``esbridge eval`` and ``tune`` into an ``eval-<folder>`` index: one holding another corpus of the same folder name,
and a folder name that is not UTF-8."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from tests.support.hashing import beir_folder


@pytest.mark.parametrize("command", [["eval", "--methods", "bm25"], ["tune", "--dry-run"]])
def test_a_refused_mass_delete_gives_a_way_out_the_command_has(
    runner: CliRunner, energy: Path, tmp_path: Path, command: list[str]
) -> None:
    first = runner.invoke(main, ["eval", str(energy), "--methods", "bm25", "--engine", "embedded"])
    assert first.exit_code == 0, first.output
    docs = {"tidal": "Tidal turbines turn sea currents into power.", "hydro": "Dams make hydroelectric power."}
    other = beir_folder(tmp_path / "other" / "energy", docs, {"t1": ("sea currents", "tidal"), "t2": ("dams", "hydro")})

    result = runner.invoke(main, [command[0], str(other), *command[1:], "--split", "test", "--engine", "embedded"])

    assert result.exit_code == 1, result.output
    assert "index eval-energy-v1 holds 2 chunks for source 'energy'" in result.output
    assert f"Evaluate {other} in an index of its own with --index NAME" in result.output
    assert "esbridge index drop --index eval-energy" in result.output
    assert "--source" not in result.output and "--allow-mass-delete" not in result.output


def test_an_index_holding_the_corpus_under_another_label_gives_a_way_out_eval_has(
    runner: CliRunner, energy: Path
) -> None:
    ingested = runner.invoke(
        main, ["ingest", str(energy), "--index", "shared", "--source", "power", "--engine", "embedded"]
    )
    assert ingested.exit_code == 0, ingested.output
    evaluate = ["eval", str(energy), "--index", "shared", "--methods", "bm25", "--engine", "embedded", "--json"]

    result = runner.invoke(main, evaluate)

    assert result.exit_code == 1, result.output
    assert "index shared-v1 already holds 2 chunk(s) of documents that" in result.stderr
    assert result.stderr.strip().endswith(
        "If shared already holds this corpus, evaluate it as it is with --reuse; otherwise evaluate "
        f"{energy} in an index of its own with --index NAME"
    )
    assert "--source" not in result.stderr
    reused = runner.invoke(main, [*evaluate, "--reuse"])
    assert reused.exit_code == 0, reused.output
    assert json.loads(reused.stdout)["index"] == "shared"


@pytest.mark.skipif(sys.platform != "linux", reason="a folder name that is not UTF-8")
def test_a_folder_whose_name_is_not_utf8_is_evaluated_under_a_readable_label(
    runner: CliRunner, energy: Path, tmp_path: Path
) -> None:
    undecodable = energy.rename(tmp_path / os.fsdecode(b"energy\xff"))
    for _ in range(2):  # the second run finds every chunk unchanged under the same label
        result = runner.invoke(main, ["eval", str(undecodable), "--methods", "bm25", "--engine", "embedded", "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["index"] == "eval-energy-"
        assert report["ingest"]["source"] == "energy\\xff"
    assert (report["ingest"]["chunks_indexed"], report["ingest"]["unchanged"]) == (0, 2)


@pytest.mark.parametrize("command", [["eval", "--methods", "bm25"], ["tune", "--dry-run"]])
def test_a_corpus_emptied_since_it_was_ingested_is_refused_as_empty_not_as_a_mass_delete(
    runner: CliRunner, energy: Path, command: list[str]
) -> None:
    # The mass-delete advice (another --index, or drop this one) only led to "found no documents" again.
    first = runner.invoke(main, ["eval", str(energy), "--methods", "bm25", "--engine", "embedded"])
    assert first.exit_code == 0, first.output
    (energy / "corpus.jsonl").write_text("", encoding="utf-8")

    result = runner.invoke(main, [command[0], str(energy), *command[1:], "--split", "test", "--engine", "embedded"])

    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: {energy / 'corpus.jsonl'} gave no document to evaluate on; nothing was written (eval-energy still "
        "holds the corpus ingested before: evaluate it as it is with --reuse)"
    )
    reused = runner.invoke(main, ["eval", str(energy), "--methods", "bm25", "--reuse", "--engine", "embedded"])
    assert reused.exit_code == 0, reused.output
