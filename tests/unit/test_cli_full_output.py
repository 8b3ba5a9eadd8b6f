"""A command whose standard output cannot take what it writes (a full disk) says so in one line, exit code 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# This tree's esbridge, not an editable install of another checkout.
_RUN = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__ "
    "and 'editable' not in getattr(f, '__name__', '')]; sys.path.insert(0, sys.argv.pop(1)); "
    "from esbridge.cli import main; main(prog_name='esbridge')"
)


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs /dev/full")
@pytest.mark.parametrize("arguments", [["info", "--json"], ["info"], ["index", "list", "--json"]])
def test_output_to_a_full_disk_is_one_error_line_not_a_traceback(tmp_path: Path, arguments: list[str]) -> None:
    env = {**os.environ, "ESBRIDGE_DATA_DIR": str(tmp_path / "data")}
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, str(REPO), *arguments, "--engine", "embedded"],
            stdout=full, stderr=subprocess.PIPE, env=env, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "Error: cannot write to standard output: No space left on device"
    assert done.returncode == 1
