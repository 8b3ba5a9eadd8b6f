"""Ctrl-C ends a command with exit code 130 (128 + SIGINT) and a short message, as shells expect; a
confirmation nobody answered (closed stdin) stays a refusal with exit code 1."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config.settings import EmbeddingSettings
from esbridge.embeddings.factory import EMBEDDERS
from tests.support.hashing import HashingEmbedder, beir_folder

REPO = Path(__file__).resolve().parents[2]


def ctrl_c(*args: Any, **kwargs: Any) -> NoReturn:
    raise KeyboardInterrupt


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    def hashing(settings: EmbeddingSettings) -> HashingEmbedder:
        return HashingEmbedder()

    monkeypatch.setitem(EMBEDDERS, "hashing", hashing)
    env = {"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache")}
    return CliRunner(env={**env, "ESBRIDGE_EMBEDDING__DIMENSION": str(HashingEmbedder().dimension)})


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    docs = {"solar": "Photovoltaic cells turn sunlight into electricity.", "wind": "Offshore wind farms make power."}
    return beir_folder(tmp_path / "energy", docs, {"q1": ("sunlight", "solar"), "q2": ("wind", "wind")})


@pytest.mark.parametrize(
    ("command", "interrupted_at"),
    [
        (["ingest", "{dataset}", "--index", "notes"], "esbridge.cli.ingest.ingest"),
        (["index", "reindex", "--index", "notes"], "esbridge.mappings.lifecycle.IndexManager.reindex"),
        (["eval", "{dataset}"], "esbridge.evaluation.session.run"),
    ],
)
def test_ctrl_c_during_a_long_command_exits_130(
    runner: CliRunner, dataset: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], interrupted_at: str
) -> None:
    monkeypatch.setattr(interrupted_at, ctrl_c)
    args = [part.format(dataset=dataset) for part in command]
    result = runner.invoke(main, [*args, "--engine", "embedded"])
    assert result.exit_code == 130, result.output
    assert result.stderr.strip() == "interrupted"
    assert "Aborted!" not in result.output


def notes_index() -> None:
    """An index to drop, so that `index drop` asks (it says there is nothing to delete without asking)."""
    created = CliRunner(env={"ESBRIDGE_EMBEDDING__DIMENSION": "32"}).invoke(
        main, ["index", "create", "--engine", "embedded", "--index", "notes"]
    )
    assert created.exit_code == 0, created.output


def test_a_closed_stdin_at_a_confirmation_still_refuses_with_exit_code_1() -> None:
    notes_index()
    result = CliRunner().invoke(main, ["index", "drop", "--engine", "embedded", "--index", "notes"], input="")
    assert result.exit_code == 1, result.output
    assert "Error: cancelled; nothing was changed" in result.stderr
    assert "interrupted" not in result.output


def read_until(stream: Any, text: str, timeout_s: float) -> str:
    seen = b""
    deadline = time.monotonic() + timeout_s
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([stream], [], [], max(left, 0))
        chunk = os.read(stream.fileno(), 4096) if ready else b""
        if not chunk:
            raise AssertionError(f"no {text!r} within {timeout_s}s; got {seen!r}")
        seen += chunk
    return seen.decode()


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_sigint_at_a_confirmation_prompt_exits_130() -> None:
    notes_index()
    command = [sys.executable, "-u", "-c", "from esbridge.cli import main; main()", "index", "drop"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [*command, "--engine", "embedded", "--index", "notes"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        # As a terminal starts it: a test run started in the background by a non-interactive shell ignores
        # SIGINT, and a child would inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        read_until(process.stdout, "[y/N]", timeout_s=60)
        # input() writes the prompt, then reads; a signal between the two is seen only once the read returns.
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
        stderr = process.stderr.read().decode()
    assert code == 130, stderr
    assert "interrupted" in stderr
    assert "Aborted!" not in stderr
    assert "cancelled" not in stderr


def test_ctrl_c_during_an_ingests_embedding_says_what_was_kept(
    runner: CliRunner, dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HashingEmbedder, "embed", ctrl_c)
    result = runner.invoke(main, ["ingest", str(dataset), "--index", "notes", "--engine", "embedded"])
    assert result.exit_code == 130, result.output
    assert result.stderr.strip().splitlines()[-1] == (
        "interrupted: 0 of 2 chunk writes were done and are kept; run the command again: it writes only what is missing"
    )
