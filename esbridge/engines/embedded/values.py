"""How a document's values are kept by the embedded engine: as the values filters compare, and back into its
``_source`` (vectors are stored apart from it)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

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
    return stored_number(field, indexed) if field.type in ROUNDED else indexed


WHOLE = frozenset({"integer", "long", "short", "byte"})
ROUNDED = WHOLE | {"float", "half_float", "scaled_float"}
"""The number types whose values a cluster keeps otherwise than as the double written (``stored_number``)."""
_LONG = 2**63


def whole(number: float) -> float:
    """A stored value of a whole-number field as a cluster keeps it: its fraction dropped (5.7 is 5, -5.7 is -5). A
    query's value is compared as it is: a ``term`` of 5.7 finds nothing there."""
    return float(math.trunc(number)) if math.isfinite(number) else number


def _java_round(number: float) -> int:
    """Java's ``Math.round``: halves up (2.5 is 3, -2.5 is -2), NaN 0, beyond a long its limit."""
    if number != number:
        return 0
    if number >= _LONG or number < -_LONG:
        return _LONG - 1 if number > 0 else -_LONG
    below = math.floor(number)
    return below + 1 if number - below >= 0.5 else below


def stored_number(field: Field, number: float) -> float:
    """A number as a cluster stores it for searching, sorting and aggregating (``_source`` keeps what was written):
    whole numbers without their fraction, ``float`` at single precision (0.1 is 0.10000000149011612),
    ``half_float`` at half precision from there (0.1 is 0.0999755859375, 1000.3 is 1000.5), ``scaled_float`` as
    the long nearest ``number * scaling_factor`` times ``1 / scaling_factor`` (0.25 at 10 is 0.30000000000000004).
    A ``term`` query's value is rounded so too, so ``term 0.1`` finds the 0.1 written to a ``half_float``."""
    kind = field.type
    if kind in WHOLE:
        return whole(number)
    with np.errstate(
        over="ignore"
    ):  # (a query's value beyond the type is infinite there: ``filters.coerce`` refuses it)
        if kind == "float":
            return float(np.float32(number))
        if kind == "half_float":
            return float(np.float16(np.float32(number)))
    if kind == "scaled_float" and field.scaling_factor is not None:
        return _java_round(number * field.scaling_factor) * (1.0 / field.scaling_factor)
    return number


def number_bound(field: Field, number: float) -> float:
    """A range's bound on a number field as a cluster compares it with the stored values (``stored_number``): at
    single precision on ``float`` and ``half_float`` (so ``gte 0.1`` misses the 0.0999755859375 that 0.1 is in a
    ``half_float``), rounded as a value on ``scaled_float`` (``lte 0.29`` at 10 is ``lte 0.3``), as written on
    whole numbers (``gte 5.5`` misses 5) and doubles."""
    if field.type in ("float", "half_float"):
        with np.errstate(over="ignore"):
            return float(np.float32(number))
    if field.type == "scaled_float":
        return stored_number(field, number)
    return number


def field_values(
    schema: Schema, source: Mapping[str, Any], by_key: Mapping[str, list[Field]] | None = None
) -> Iterator[tuple[str, Any]]:
    """(field path, filter value) of every value ``source`` holds for the fields of ``by_key`` (the schema's
    ``filterable_by_key`` unless given)."""
    by_key = schema.filterable_by_key if by_key is None else by_key
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
                    yield field.path, stored_number(field, item) if kind in ROUNDED else item
                elif item is not None and not isinstance(item, (Mapping, list)):
                    indexed = readable_value(field, item)
                    if indexed is not None and (not limited or field.indexes(indexed)):
                        yield field.path, indexed
