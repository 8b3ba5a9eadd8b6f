"""Replacing a settings file whole, so that a failed or interrupted write never leaves half of one."""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from pathlib import Path

from esbridge.errors import ConfigError
from esbridge.ids import shown_path


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``, so a failure or a crash
    midway leaves the old file whole (a full disk, a size limit, a kill). A symlink stays one (its target is
    replaced), and an existing file keeps its mode: a settings file with credentials may be owner-only, and the
    temporary file is never more open than it while it holds the text."""
    target = path.resolve()
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, creation_mode(target))
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if target.exists():
            shutil.copymode(target, temporary)
        os.replace(temporary, target)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            reason = exc.strerror or exc
            raise ConfigError(f"cannot write config file {shown_path(path)}: {reason}; it is unchanged") from exc
        raise


def creation_mode(target: Path) -> int:
    """The mode to create a file that will replace ``target`` with: ``target``'s own when it exists (so what it
    keeps from group and others stays kept while the new file is written), else 0o666; the umask applies."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666
