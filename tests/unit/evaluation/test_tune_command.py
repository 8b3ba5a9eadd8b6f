"""``esbridge tune`` and the environment: settings it writes that an ``ESBRIDGE_*`` variable would override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ESBRIDGE_PIPELINE__FUSION", "rrf"),
        ("ESBRIDGE_PIPELINE__WEIGHTS", '{"bm25": 2}'),
        ("ESBRIDGE_PIPELINE__FUSION_PARAMS__K", "30"),
        ("ESBRIDGE_PIPELINE", '{"fusion": "rrf"}'),
    ],
)
def test_tune_names_a_variable_that_would_override_what_it_writes(
    runner: CliRunner, energy: Path, tmp_path: Path, variable: str, value: str
) -> None:
    target = tmp_path / "tuned.toml"
    result = runner.invoke(
        main,
        ["tune", str(energy), "--split", "test", "--engine", "embedded", "--output", str(target), "--json"],
        env={variable: value},
    )
    assert result.exit_code == 0, result.output
    shadowed = [warning for warning in json.loads(result.stdout)["warnings"] if variable in warning]
    assert len(shadowed) == 1, result.stdout
    assert f"that tune writes to {target}" in shadowed[0]
    assert "searches will not use the tuned settings until it is unset" in shadowed[0]
    assert f"warning: {shadowed[0]}" in result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [("ESBRIDGE_PIPELINE__TOP_N_MAX", "100"), ("ESBRIDGE_PIPELINE", '{"top_n_max": 100}')],
)
def test_tune_says_nothing_of_pipeline_variables_it_does_not_write(
    runner: CliRunner, energy: Path, variable: str, value: str
) -> None:
    result = runner.invoke(
        main,
        ["tune", str(energy), "--split", "test", "--engine", "embedded", "--dry-run", "--json"],
        env={variable: value},
    )
    assert result.exit_code == 0, result.output
    assert not [warning for warning in json.loads(result.stdout)["warnings"] if "ESBRIDGE_PIPELINE" in warning]
