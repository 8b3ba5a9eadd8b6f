"""``esbridge eval`` and ``tune`` into an ``eval-<folder>`` index that holds another corpus of the same folder name."""

from __future__ import annotations

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
