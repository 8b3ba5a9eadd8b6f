"""Where `esbridge export` writes: a file replaced whole, but never a pipe or device put aside for a file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest import transfer
from esbridge.ingest.transfer import export_chunks, import_chunks

HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 2}
CHUNKS = [{"_id": f"{name}#0", "chunk_id": f"{name}#0", "doc_id": name, "body": name} for name in ("a", "b")]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    source = tmp_path / "source.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in [HEADER, *CHUNKS]) + "\n", encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        assert import_chunks(engine, "notes", source) == (2, [])
    finally:
        engine.close()
    return tmp_path / "data"


def chunk_ids(text: str) -> list[str]:
    return [json.loads(line)["_id"] for line in text.splitlines()[1:]]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_export_into_a_named_pipe_is_written_through_it(data_dir: Path, tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text(encoding="utf-8")), daemon=True)
    reader.start()

    result = CliRunner().invoke(
        main, ["export", "--index", "notes", "-o", str(pipe)], env={"ESBRIDGE_DATA_DIR": str(data_dir)}
    )
    reader.join(timeout=30)

    assert result.exit_code == 0, result.output
    assert chunk_ids(received[0]) == ["a#0", "b#0"], "the reader got the export"
    assert pipe.is_fifo(), "the pipe is still a pipe, not a file put in its place"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data", "pipe", "source.jsonl"]


def test_an_export_through_a_symbolic_link_replaces_the_file_it_points_at(data_dir: Path, tmp_path: Path) -> None:
    real = tmp_path / "exports" / "notes.jsonl"
    real.parent.mkdir()
    real.write_text("an earlier export\n", encoding="utf-8")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)

    result = CliRunner().invoke(
        main, ["export", "--index", "notes", "-o", str(link)], env={"ESBRIDGE_DATA_DIR": str(data_dir)}
    )

    assert result.exit_code == 0, result.output
    assert link.is_symlink(), "the link is kept"
    assert chunk_ids(real.read_text(encoding="utf-8")) == ["a#0", "b#0"]
    assert sorted(path.name for path in real.parent.iterdir()) == ["notes.jsonl"], "no temporary file is left"


def test_an_export_over_an_owner_only_file_is_never_open_to_others(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The export is written to a temporary file beside the target first, for as long as the export takes.
    target = tmp_path / "notes.jsonl"
    target.write_text("an earlier export\n", encoding="utf-8")
    target.chmod(0o600)
    modes: list[int] = []

    def noting_the_mode(engine: Any, manager: Any, out: TextIO) -> int:
        count = export_chunks(engine, manager, out)
        out.flush()
        modes.append(stat.S_IMODE(os.fstat(out.fileno()).st_mode))
        return count

    monkeypatch.setattr(transfer, "export_chunks", noting_the_mode)
    umask = os.umask(0o022)
    try:
        result = CliRunner().invoke(
            main, ["export", "--index", "notes", "-o", str(target)], env={"ESBRIDGE_DATA_DIR": str(data_dir)}
        )
    finally:
        os.umask(umask)

    assert result.exit_code == 0, result.output
    assert modes == [0o600]
    assert target.stat().st_mode & 0o777 == 0o600
    assert chunk_ids(target.read_text(encoding="utf-8")) == ["a#0", "b#0"]


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs /dev/full")
def test_an_export_to_a_full_standard_output_says_so_in_one_line(data_dir: Path) -> None:
    env = {**os.environ, "ESBRIDGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-m", "esbridge", "export", "--index", "notes"],
            stdout=full, stderr=subprocess.PIPE, env=env, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "Error: cannot write to standard output: No space left on device"
