"""Metadata as searchable text: the ``metadata_text`` field that BM25 matches against.

``{"vendor": {"name": "Acme", "tier": 2}, "topics": ["ml", "search"], "draft": false}`` becomes::

    vendor.name: Acme
    vendor.tier: 2
    topics: ml, search
    draft: false

Nested keys are joined with dots; list items (and the values of objects inside lists, under the same
dotted key) are joined with ", " without repeats; whitespace runs become one space, so each pair is one
line; ``None`` and empty values are left out. Keys keep the order in which they first appear.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date
from typing import Any

_SEQUENCES = (list, tuple, set, frozenset)


def metadata_pairs(metadata: Mapping[str, Any], *, exclude: Collection[str] = ()) -> list[tuple[str, str]]:
    """``(dotted key, value text)`` pairs; top-level keys in ``exclude`` are left out."""
    values: dict[str, dict[str, None]] = {}

    def visit(key: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for name, item in value.items():
                visit(f"{key}.{name}" if key else str(name), item)
        elif isinstance(value, _SEQUENCES):
            items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
            for item in items:
                visit(key, item)
        else:
            text = scalar_text(value)
            if text:
                values.setdefault(key, {})[text] = None

    for name, value in metadata.items():
        if name not in exclude:
            visit(str(name), value)
    return [(key, ", ".join(items)) for key, items in values.items()]


def flatten_metadata(metadata: Mapping[str, Any], *, exclude: Collection[str] = ()) -> str:
    """One ``key: value`` line per leaf key path (see the module docstring)."""
    return "\n".join(f"{key}: {value}" for key, value in metadata_pairs(metadata, exclude=exclude))


def scalar_text(value: Any) -> str:
    """A leaf value as one line of text: booleans as JSON spells them, dates in ISO 8601."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, date):
        return value.isoformat()
    return " ".join(str(value).split())
