"""Registry files for the registry source tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_registry(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a registry JSON-lines file in ``tmp_path``."""
    path = tmp_path / "registry.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path
