"""Writing an attached index's ``[fields.<index>]`` table into a settings file, changing nothing else in it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from esbridge import errors
from esbridge.attach.proposal import toml_table
from esbridge.config.fields import FieldMap
from esbridge.config.files import replace_text
from esbridge.ids import shown_path
from esbridge.text import where_not_utf8

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]


def _parsed(text: str, path: Path) -> dict[str, Any]:
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise errors.ConfigError(f"cannot read config file {shown_path(path)}: {exc}") from exc


def write_field_map(path: Path, index: str, fields: FieldMap) -> None:
    """Append ``[fields.<index>]`` to the TOML file at ``path`` (created if missing).

    An index that already has a table is refused rather than overwritten: the operator may have edited it.
    The new text is parsed and compared with the old before it is written, so no other setting can change,
    and it replaces the file whole (``replace_text``).
    """
    try:
        original = path.read_text(encoding="utf-8") if path.exists() else ""
    except UnicodeDecodeError as exc:  # its own words give an offset in the file, not a line
        raise errors.ConfigError(f"cannot read config file {shown_path(path)}: {where_not_utf8(exc)}") from exc
    except OSError as exc:
        raise errors.ConfigError(f"cannot read config file {shown_path(path)}: {exc}") from exc
    before = _parsed(original, path)
    if index in (before.get("fields") or {}):
        raise errors.ConfigError(
            f"{shown_path(path)} already has a [fields.{index}] table; nothing was written. Edit it, or remove it "
            "and run `esbridge index inspect --write` again"
        )
    separator = "" if not original or original.endswith("\n\n") else ("\n" if original.endswith("\n") else "\n\n")
    written = original + separator + toml_table(index, fields)
    after = _parsed(written, path)
    expected = {**before, "fields": {**(before.get("fields") or {}), index: fields.model_dump(exclude_defaults=True)}}
    if after != expected:
        raise errors.ConfigError(
            f"cannot add [fields.{index}] to {shown_path(path)} without changing its other settings (a dotted "
            f"fields.* key?); nothing was written. Add this table by hand:\n{toml_table(index, fields)}"
        )
    replace_text(path, written)
