"""How a document's values are kept by the embedded engine: as the values filters compare, and back into its
``_source`` (vectors are stored apart from it)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from esbridge.engines.embedded.dates import parse_date
from esbridge.engines.embedded.mapping import NUMERIC, Field, Schema
from esbridge.engines.embedded.shapes import flat_items, value_at


def sql_date(value: Any) -> float | None:
    """A date value as epoch milliseconds for SQL (the ``esb_date`` function); None when it is none."""
    try:
        return parse_date(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def put_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def without_path(source: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    """``source`` without the value at ``path``, copying only the objects on the way."""
    copy = dict(source)
    if len(path) == 1:
        copy.pop(path[0], None)
    elif isinstance(copy.get(path[0]), Mapping):
        copy[path[0]] = without_path(copy[path[0]], path[1:])
    return copy


def indexed_value(field: Field, value: Any) -> Any:
    """The value a filter compares: keywords as text, dates as epoch milliseconds, numbers and booleans as numbers."""
    if field.type == "date":
        return parse_date(value, field.date_format)
    if field.type == "boolean":
        return 1 if value in (True, "true") else 0
    if field.type in NUMERIC:
        return float(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def readable_value(field: Field, value: Any) -> Any:
    """``indexed_value``, or None for a value the field cannot read: one written before a mapping update added the
    field (every later write is checked against it), which is left unindexed, as a cluster leaves it."""
    try:
        indexed = indexed_value(field, value)
    except (TypeError, ValueError, OverflowError):
        return None
    return whole(indexed) if field.type in WHOLE else indexed


WHOLE = frozenset({"integer", "long", "short", "byte"})


def whole(number: float) -> float:
    """A stored value of a whole-number field as a cluster keeps it: its fraction dropped (5.7 is 5, -5.7 is -5). A
    query's value is compared as it is: a ``term`` of 5.7 finds nothing there."""
    return float(math.trunc(number)) if math.isfinite(number) else number


def field_values(schema: Schema, source: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    by_key = schema.filterable_by_key
    for key, top in source.items():
        fields = by_key.get(key)
        if fields is None:
            continue
        for field in fields:
            value = top if len(field.source_path) == 1 else value_at(source, field.source_path)
            if value is None:
                continue
            kind = field.type
            limited = field.ignore_above is not None
            for item in flat_items(value):
                plain = type(item)
                if (plain is str and kind == "keyword" and not limited) or (plain is float and kind in NUMERIC):
                    yield field.path, whole(item) if kind in WHOLE else item
                elif item is not None and not isinstance(item, (Mapping, list)):
                    indexed = readable_value(field, item)
                    if indexed is not None and (not limited or field.indexes(indexed)):
                        yield field.path, indexed
