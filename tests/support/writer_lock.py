"""Another process holding an embedded data directory's writer lock, for as long as a test needs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLDER = """
import sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine.bulk("notes", [BulkAction("delete", "nothing")])
print("holding", flush=True)
sys.stdin.readline()
engine.close()
"""


@contextmanager
def another_writer(data_dir: Path | str) -> Iterator[int]:
    """A process that has written to the index ``notes`` of ``data_dir`` (so it holds the writer lock) until the
    block ends; its pid."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "holding"
            yield holder.pid
        finally:
            holder.stdin.write("\n")
            holder.stdin.flush()
