"""The shared datasets beside the checkout (``../shared``), as CI provides them, or where
``ESBRIDGE_TEST_SHARED`` points (a git worktree has no ``../shared`` beside it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("ESBRIDGE_TEST_SHARED") or REPO.parent / "shared")
REGISTRY = SHARED / "data" / "registry"
SCIFACT = SHARED / "data" / "beir" / "scifact"
CISI = SHARED / "data" / "classic" / "cisi"
MED = SHARED / "data" / "classic" / "med"
DENDRON_VAULT = SHARED / "data" / "vault" / "dendron-site" / "vault"


def require(path: Path) -> Path:
    """``path``, or a skip when it is absent; in CI, where ../shared is always provided, a failure."""
    if not path.exists():
        message = f"shared dataset not found at {path}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
