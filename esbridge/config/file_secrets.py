"""A settings file that holds secrets while group or others may read it is named in a warning.

The API keys file is refused in that case (``esbridge.service.auth``). A settings file is warned about instead:
it holds far more than secrets, and most hold none, so refusing it would stop commands that reveal nothing.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from esbridge.errors import SettingsWarning
from esbridge.ids import shown_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

SECRET_SETTINGS = (("auth", "password"), ("auth", "api_key"), ("service", "api_keys"))
_READ_BY_OTHERS = stat.S_IRGRP | stat.S_IROTH


def secrets_in(data: Mapping[str, Any]) -> list[str]:
    """The secret settings ``data`` (a settings file's tables) holds: a password in ``url``, ``auth.password``, ..."""
    found = ["a password in url"] if _has_password(data.get("url")) else []
    for section, key in SECRET_SETTINGS:
        table = data.get(section)
        if isinstance(table, Mapping) and table.get(key):
            found.append(f"{section}.{key}")
    return found


def warn_if_readable_by_others(path: Path) -> None:
    """A ``SettingsWarning`` when the settings file ``path`` holds secrets and group or others may read it (POSIX).
    A file that cannot be read or parsed is left to the settings loader, which says why."""
    if os.name != "posix":
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if not mode & _READ_BY_OTHERS:
            return
        with path.open("rb") as file:
            found = secrets_in(tomllib.load(file))
    except (OSError, ValueError):
        return
    if found:
        warnings.warn(
            f"config file {shown_path(path)} holds {', '.join(found)} and group or others may read it (mode "
            f"{mode:04o}); restrict it with: chmod 600 {shlex.quote(shown_path(path))}, or give the secrets as "
            "ESBRIDGE_* environment variables",
            SettingsWarning,
            stacklevel=3,
        )


def _has_password(url: Any) -> bool:
    if not isinstance(url, str) or "@" not in url:
        return False
    try:
        return urlsplit(url.strip()).password is not None
    except ValueError:
        return True  # not a URL urllib can read (an unencoded '/' in a password): settings refuse it anyway
