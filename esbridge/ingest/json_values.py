"""JSON values named for error messages: ``number 1.5``, ``string 'abc'``, ``array``."""

from __future__ import annotations

import json
from typing import Any

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
