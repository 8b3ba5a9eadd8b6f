"""The small JSON file beside a full-text index or a graph that records the last logged change it holds."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_applied(path: Path) -> int | None:
    """The change recorded in ``path``; None when there is no readable record."""
    try:
        return int(json.loads(path.read_text())["applied"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_applied(path: Path, applied: int) -> None:
    """Record ``applied`` in ``path``, replacing the file whole, so a crash leaves the old record or the new."""
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps({"applied": applied}))
    os.replace(scratch, path)
