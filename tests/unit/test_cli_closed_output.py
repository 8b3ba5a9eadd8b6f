"""A command run with standard output closed (``>&-``) says it cannot write its results, in one line, exit code 1,
rather than printing nothing and exiting 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.run import ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder, beir_folder

REPO = Path(__file__).resolve().parents[2]
# This tree's esbridge (not an editable install of another checkout), with the hashing model as "hashing".
_RUN = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__ "
    "and 'editable' not in getattr(f, '__name__', '')]; sys.path.insert(0, sys.argv.pop(1)); "
    "from esbridge.embeddings.factory import EMBEDDERS; from tests.support.hashing import HashingEmbedder; "
    "EMBEDDERS['hashing'] = lambda settings: HashingEmbedder(); "
    "from esbridge.cli import main; main(prog_name='esbridge')"
)
CLOSED = "Error: cannot write to standard output: Bad file descriptor"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder whose index ``energy`` holds the BEIR folder ``energy``'s two documents."""
    root = tmp_path_factory.mktemp("closed-output")
    docs = {"solar": "Photovoltaic cells turn sunlight into electricity.", "wind": "Offshore wind farms make power."}
    folder = beir_folder(root / "energy", docs, {"q1": ("sunlight", "solar"), "q2": ("wind power", "wind")})
    engine = EmbeddedEngine(root / "data")
    try:
        manager = IndexManager(engine, "energy", IndexParameters(dimension=HashingEmbedder.dimension))
        assert ingest(folder, engine=engine, manager=manager, embedder=HashingEmbedder()).documents_indexed == 2
    finally:
        engine.close()
    return root


def run_closed(workspace: Path, arguments: list[str], *, closed: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ESBRIDGE_DATA_DIR": str(workspace / "data"),
        "ESBRIDGE_ENGINE": "embedded",
        "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(workspace / "cache"),
        "ESBRIDGE_EMBEDDING__QUERY_PROCESSES": "0",  # a spawned process would not know the hashing model
    }
    command = [sys.executable, "-c", _RUN, str(REPO), *arguments]
    # `exec CMD >&-` as a shell runs it: descriptor 1 is closed when the program starts.
    shell = ["sh", "-c", 'exec "$@" >&-' if closed else 'exec "$@"', "sh", *command]
    return subprocess.run(
        shell,
        stdout=None if closed else subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["search", "sunlight", "--index", "energy"],
        ["search", "sunlight", "--index", "energy", "--json"],
        ["eval", "{energy}", "--index", "energy", "--reuse", "--methods", "bm25", "--split", "test"],
        ["bench", "{energy}", "--index", "energy", "--modes", "bm25", "--warmup", "0", "--limit", "2"],
        ["index", "list", "--index", "energy"],
        ["info", "--json"],
        ["export", "--index", "energy"],
        ["--help"],
    ],
)
def test_results_to_a_closed_standard_output_are_one_error_line(workspace: Path, arguments: list[str]) -> None:
    arguments = [argument.replace("{energy}", str(workspace / "energy")) for argument in arguments]
    done = run_closed(workspace, arguments)
    assert (done.returncode, done.stderr.strip().splitlines()[-1:]) == (1, [CLOSED]), done.stderr
    assert "Traceback" not in done.stderr


def test_the_same_commands_with_standard_output_open_succeed(workspace: Path) -> None:
    done = run_closed(workspace, ["search", "sunlight", "--index", "energy", "--json"], closed=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["doc_id"] == "solar"


def test_an_ingest_does_its_work_then_says_it_could_not_report_it(workspace: Path, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "tidal", "text": "Tidal turbines turn sea currents into power."}) + "\n")
    done = run_closed(workspace, ["ingest", str(records), "--index", "tides"])
    assert (done.returncode, done.stderr.strip()) == (1, CLOSED)
    engine = EmbeddedEngine(workspace / "data")
    try:
        assert engine.count("tides") == 1, "the chunks were written; only the summary was lost"
    finally:
        engine.close()


def test_an_mcp_server_without_standard_output_refuses_to_start(workspace: Path) -> None:
    # Its replies go to standard output only: closed, it would read requests it can never answer.
    done = run_closed(workspace, ["mcp", "--index", "energy"])
    assert (done.returncode, done.stderr.strip()) == (1, CLOSED), done.stderr
