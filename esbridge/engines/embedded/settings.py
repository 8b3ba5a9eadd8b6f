"""Index settings as the create-index request gives them, folded into OpenSearch's nested form."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def merge(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` merged into ``target`` in place, objects recursively; values deep-copied."""
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def index_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The create-index ``settings`` in the nested form ``{"index": {...}}`` (flat and dotted keys folded in)."""
    index: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "index" and isinstance(value, Mapping):
            merge(index, value)
            continue
        target = index
        parts = key.removeprefix("index.").split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = copy.deepcopy(value)
    return {"index": index}
