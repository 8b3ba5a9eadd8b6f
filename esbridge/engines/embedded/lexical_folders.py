"""Where an index's full-text directories lie in the data directory: one per layout, named by index id and digest."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from esbridge.engines.embedded.lexical_layout import Layout


def folder_for(root: Path, index_id: int, layout: Layout) -> Path:
    return root / "lexical" / f"{index_id}-{layout.digest}"


def remove_all(root: Path, index_id: int, *, keep: Path | None = None) -> None:
    """Delete every lexical directory of ``index_id`` (all layouts but ``keep``)."""
    base = root / "lexical"
    if base.exists():
        for folder in base.glob(f"{index_id}-*"):
            if folder != keep:
                shutil.rmtree(folder, ignore_errors=True)


def owners(root: Path) -> set[int]:
    """The index ids of the directories in ``lexical/``."""
    return {
        int(path.name.split("-", 1)[0]) for path in root.glob("lexical/*-*") if path.name.split("-", 1)[0].isdigit()
    }
