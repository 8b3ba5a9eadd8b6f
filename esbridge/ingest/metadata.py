"""Metadata as searchable text: the ``metadata_text`` field that BM25 matches against.

``{"vendor": {"name": "Acme", "tier": 2}, "topics": ["ml", "search"], "draft": false}`` becomes::

    vendor.name: Acme
    vendor.tier: 2
    topics: ml, search
    draft: false

Nested keys are joined with dots; list items (and the values of objects inside lists, under the same
dotted key) are joined with ", " without repeats; whitespace runs become one space, so each pair is one
line; ``None`` and empty values are left out. Keys keep the order in which they first appear.

Some keys are computed by the sources (``unresolved_links``, ``unresolved_link_weights``, a registry record's
``tool_count`` and ``skill_records``); a value the input
gives under one of them is kept as ``given_<key>``, with a warning, rather than overwritten (``with_computed``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date
from typing import Any

_SEQUENCES = (list, tuple, set, frozenset)
_COMPUTED = {
    "unresolved_links": "the links that name no {unit}",
    "unresolved_link_weights": "the weights of the links that name no {unit}",
    "tool_count": "the number of the {unit}'s tools",
    "skill_records": "the {unit}'s skills as given",
    "tool_records": "the {unit}'s tools as given",
}


def with_computed(
    metadata: Mapping[str, Any], computed: Mapping[str, Any], *, unit: str
) -> tuple[dict[str, Any], list[str]]:
    """``metadata`` with the ``computed`` keys set; a value it gave under one of them moves to ``given_<key>``
    with a warning, unless it is what esbridge computes (a record read back and written again). ``unit`` is what a
    link names (``note``, ``record``)."""
    merged = dict(metadata)
    warnings: list[str] = []
    for key, value in computed.items():
        if key in merged and merged[key] != value:
            moved = f"given_{key}"
            while moved in merged or moved in computed:
                moved = f"given_{moved}"
            merged[moved] = merged.pop(key)
            what = _COMPUTED.get(key, "a value").format(unit=unit)
            warnings.append(
                f"metadata key {key!r} holds {what}, which esbridge computes; the value given is kept as {moved!r}"
            )
        merged[key] = value
    return merged, warnings


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
