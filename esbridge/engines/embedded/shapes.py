"""A document's shape as a cluster reads it: how deep it nests, and arrays within arrays read as one flat array."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

MAX_DEPTH = 500
"""The deepest nesting of objects and arrays a document may have, the document itself counting as 1. A cluster's
JSON parser allows 1,000; Python's JSON reader and writer, which store and return ``_source``, fail not far below
that (its recursion limit), and within a deep call stack sooner."""

_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def nesting_depth(
    document: Mapping[str, Any], skip: Collection[str] = (), limit: int = MAX_DEPTH
) -> tuple[int, str] | None:
    """(depth, top-level key) of the first place where ``document`` nests deeper than ``limit``; None when it does
    not. Walked without recursion, so that any depth is measured; the keys in ``skip`` are not (vectors, checked
    to be flat arrays of numbers, whose walk would cost as much as the rest of a document's checks)."""
    for key, value in document.items():
        if key in skip:
            continue
        pending: list[tuple[Any, int]] = [(value, 2)]
        while pending:
            item, depth = pending.pop()
            inner = item.values() if isinstance(item, dict) else item
            if not isinstance(item, _CONTAINERS) or _SCALARS.issuperset(map(type, inner)):
                continue  # (a scalar, or an object or array of them: nothing deeper)
            if depth >= limit:
                return depth + 1, key
            pending.extend((child, depth + 1) for child in inner)
    return None


def flat_items(value: Any) -> list[Any]:
    """A field's values: an array's items with arrays inside it flattened (``[["a", "b"], "c"]`` holds ``a``, ``b``
    and ``c``, as a cluster indexes it); a single value as one item."""
    if type(value) is not list:
        return [value]
    if list not in set(map(type, value)):
        return value
    return [inner for item in value for inner in flat_items(item)]


def value_at(item: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``item``; where arrays of objects lie on the way, the values in each of them as
    one list, as OpenSearch indexes them. None where there is none."""
    for depth, part in enumerate(path):
        if type(item) is list:
            return [value for inner in item for value in _flat(value_at(inner, path[depth:]))]
        if not isinstance(item, Mapping):
            return None
        item = item.get(part)
    return item


def _flat(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if type(value) is list else [value]
