"""Fixtures shared by the ingest tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    """An embedded engine keeping its data in ``tmp_path / "data"``, closed after the test."""
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()
