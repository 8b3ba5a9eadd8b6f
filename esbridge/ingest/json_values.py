"""JSON values named for error messages: ``number 1.5``, ``string 'abc'``, ``array``; a record's validation errors
by field."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


def json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def describe_value(value: Any) -> str:
    """A JSON value for an error message: its type, and the value itself when it is short."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"number {_short(str(value))}"
    if isinstance(value, str):
        return f"string {_short(value)!r}"
    return json_type(value)


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def too_deep(value: Any, limit: int) -> str | None:
    """The top-level field of ``value`` (an object) whose nesting goes deeper than ``limit``, if any.

    Iterative, so a value nested deeper than the interpreter's recursion limit is measured, not crashed on.
    """
    if not isinstance(value, dict):
        return None
    for field, item in value.items():
        stack: list[tuple[Any, int]] = [(item, 1)]
        while stack:
            current, depth = stack.pop()
            if depth > limit:
                return str(field)
            if isinstance(current, dict):
                stack.extend((child, depth + 1) for child in current.values())
            elif isinstance(current, list):
                stack.extend((child, depth + 1) for child in current)
    return None


def describe_validation_error(exc: ValidationError) -> str:
    """Every field error as ``field 'tools[0].name': <what is wrong>``, joined by ``; ``."""
    parts = []
    for error in exc.errors():
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
        if error["type"] == "missing":
            parts.append(f"field {where!r} is missing")
            continue
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] != "value_error":
            message += f", got {describe_value(error['input'])}"
        parts.append(f"field {where!r}: {message}" if where else message)
    return "; ".join(parts)


def refuse_too_deep(data: Any, limit: int) -> Any:
    """``data`` unchanged, or ValueError naming its field nested deeper than ``limit`` (a record validator)."""
    field = too_deep(data, limit)
    if field is not None:
        raise ValueError(f"field {field!r}: nested more than {limit} levels deep")
    return data
