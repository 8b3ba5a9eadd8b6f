"""The embedded engine's database file as this process opened it: later connections open that file or none.

A process keeps its connections, full-text and graph files open while it runs. Once the data directory is removed
or moved away, a connection opened anew would make an empty database in its place; once a copy is restored there
(or another process made a database anew), the connections opened before still write into the removed file, which
no process reads again, while those opened after read the copy. Either is refused, naming the database.
"""

from __future__ import annotations

import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


def identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device and inode, which a move within the file system keeps), or None if none."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def gone(path: Path) -> str:
    return f"the database {path} is gone (its data directory was removed or moved while this process runs)"


def replaced(path: Path) -> str:
    return (
        f"the database {path} is not the file this process opened (a copy restored, or a database made anew by "
        "another process, while this process runs): restart it to open that one, or move the original back"
    )


@dataclass(frozen=True)
class Problem:
    """Why a process can no longer use the database it opened: no database at its path (``gone``: nothing, or no
    file, there) or another file there (``replaced``). Printed, the message that says so, naming the database."""

    path: Path
    kind: Literal["gone", "replaced"]

    def __str__(self) -> str:
        return gone(self.path) if self.kind == "gone" else replaced(self.path)


def problem(path: Path, opened: tuple[int, int] | None) -> Problem | None:
    """Why this process can no longer use the database it opened (as ``opened``) at ``path``, or None (one stat)."""
    try:
        found = path.stat()
    except OSError:
        return Problem(path, "gone")
    if not stat.S_ISREG(found.st_mode):
        return Problem(path, "gone")
    return Problem(path, "replaced") if opened is not None and (found.st_dev, found.st_ino) != opened else None


def open_existing(path: Path) -> sqlite3.Connection:
    """A connection to the database at ``path``, which must exist: opened plainly, a database removed while the
    process runs would come back as a new empty file, which a later write would fill without the index's tables."""
    try:
        return sqlite3.connect(
            f"{path.absolute().as_uri()}?mode=rw", uri=True, isolation_level=None, check_same_thread=False
        )
    except sqlite3.OperationalError as exc:
        if path.is_file():
            raise
        raise sqlite3.OperationalError(f"{exc}: {gone(path)}") from exc
