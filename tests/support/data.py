"""The shared datasets beside the checkout (``../shared``), as CI provides them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
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
