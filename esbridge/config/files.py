"""Replacing a settings file whole, so that a failed or interrupted write never leaves half of one."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from esbridge.errors import ConfigError


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``, so a failure or a crash
    midway leaves the old file whole (a full disk, a size limit, a kill). A symlink stays one (its target is
    replaced), and an existing file keeps its mode: a settings file with credentials may be owner-only."""
    target = path.resolve()
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
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
            raise ConfigError(f"cannot write config file {path}: {exc}; it is unchanged") from exc
        raise
