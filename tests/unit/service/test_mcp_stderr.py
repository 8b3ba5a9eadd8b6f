"""``esbridge mcp`` against an engine that is down: each failed search is one short line on stderr, naming the
failure, not kilobytes of traceback that fill a pipe the MCP host may never read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
SEARCHES = 3


def test_searches_against_an_unreachable_engine_write_one_line_each_to_stderr(tmp_path: Path) -> None:
    lines = [json.dumps(INITIALIZE), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for request_id in range(1, SEARCHES + 1):
        call = {"name": "search", "arguments": {"query": "energy"}}
        lines.append(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}))
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    stderr_path = tmp_path / "stderr.txt"
    command = [sys.executable, "-m", "esbridge", "mcp", "--url", "http://127.0.0.1:9299", "--index", "h87-none"]
    # stderr goes to a file, so that a flood of it cannot block the test
    with (
        stderr_path.open("w") as stderr,
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            text=True,
            cwd=tmp_path,
        ) as process,
    ):
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(line + "\n" for line in lines))
        process.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < SEARCHES + 1:
            line = process.stdout.readline()
            assert line, "the server ended before answering"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
        process.stdin.close()
        process.wait(timeout=60)
    for request_id in range(1, SEARCHES + 1):
        assert answers[request_id]["result"]["isError"] is True
    written = stderr_path.read_text()
    assert "9299" in written, written  # the failure is still named
    assert "Traceback" not in written
    assert len(written.encode()) < 600 * SEARCHES, written
