"""The small JSON file beside a full-text index or a graph that records the last logged change it holds (and,
for a full-text index, what it learnt of its fields' lengths)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def read_state(path: Path) -> dict[str, Any] | None:
    """The record in ``path``; None when there is no readable record."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def read_applied(path: Path) -> int | None:
    """The change recorded in ``path``; None when there is no readable record."""
    try:
        return int((read_state(path) or {})["applied"])
    except (ValueError, KeyError, TypeError):
        return None


def write_applied(path: Path, applied: int, extra: Mapping[str, Any] | None = None) -> None:
    """Record ``applied`` (and ``extra``) in ``path``, replacing the file whole, so a crash leaves the old record or
    the new."""
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps({**(extra or {}), "applied": applied}))
    os.replace(scratch, path)
