"""The data directory a setting names, checked before anything is made in it: a folder (or none yet), and a path
whose name is UTF-8, the only kind tantivy opens (its full-text indices live there)."""

from __future__ import annotations

import os
from pathlib import Path

from esbridge import errors

_SET_IT = "Set data_dir (ESBRIDGE_DATA_DIR, or data_dir in the settings file) to"


def given_path(data_dir: object) -> Path:
    """The data directory a caller gives: a path, or its bytes (as ``os.fsencode`` gives them); a path of another
    type is refused by name."""
    if not isinstance(data_dir, str | bytes | os.PathLike):
        raise TypeError(f"the embedded engine's data directory must be a path, not {type(data_dir).__name__}")
    return Path(os.fsdecode(data_dir))


def make_data_dir(data_dir: Path) -> None:
    """Create ``data_dir`` if missing; a file where it or a folder above it should be is a setting to fix, said so
    (mkdir would say only "File exists" or "Not a directory")."""
    _check_utf8(data_dir)
    for path in (data_dir, *data_dir.parents):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                where = "it" if path == data_dir else f"{path}, on its path,"
                what = "a symbolic link to nothing" if not path.exists() else "a file"
                raise errors.ConfigError(
                    f"the embedded engine's data directory {data_dir} is not a folder: {where} is {what}. {_SET_IT} a "
                    "folder, or to one that does not exist yet"
                )
            break
    data_dir.mkdir(parents=True, exist_ok=True)


def _check_utf8(data_dir: Path) -> None:
    """Refuse a path that is not UTF-8 (as given, or as it resolves: the current folder or a link on its way), which
    tantivy cannot open: the data directory was made and filled, and every full-text index then said it was damaged."""
    _refuse_unless_utf8(data_dir, data_dir)
    try:
        resolved = data_dir.resolve()
    except (OSError, RuntimeError):  # (a loop of links: mkdir says so)
        return
    _refuse_unless_utf8(data_dir, resolved)


def _refuse_unless_utf8(data_dir: Path, path: Path) -> None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        where = "" if path == data_dir else f" (it resolves to {shown(path)})"
        raise errors.ConfigError(
            f"the embedded engine's data directory {shown(data_dir)}{where} is not valid UTF-8, which its full-text "
            f"indices need. {_SET_IT} a folder whose path is UTF-8"
        ) from None


def shown(path: Path) -> str:
    """``path`` as it can be printed: the bytes of a name that is not UTF-8 escaped (``\\xff``)."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # (a lone surrogate no file name decodes to)
        return str(path).encode("utf-8", "backslashreplace").decode("utf-8")
