"""Index settings as the create-index request gives them, folded into OpenSearch's nested form, and the few the
embedded engine reads: the default similarity's BM25 b and ``max_terms_count``."""

from __future__ import annotations

import copy
import json
import re
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


MAX_TERMS_COUNT = 65_536
"""``index.max_terms_count`` when an index does not set it, as on both clusters."""
_MAX_INT = 2**31 - 1


def max_terms_count(index: Mapping[str, Any], *, strict: bool) -> int:
    """The ``max_terms_count`` of an index's ``index`` settings: how many values a ``terms`` query on a mapped field
    may hold. ``strict`` (at creation) refuses a value a cluster refuses, in its words; otherwise such a value, which
    an index created before the setting was honoured may hold, reads as the default it had then."""
    value = index.get("max_terms_count", MAX_TERMS_COUNT)
    text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    count = int(text) if re.fullmatch(r"-?[0-9]+", text) else None
    if count is not None and 1 <= count <= _MAX_INT:
        return count
    if not strict:
        return MAX_TERMS_COUNT
    shown = value if isinstance(value, str) else json.dumps(value)
    bound = "" if count is None else " must be >= 1" if count < 1 else f" must be <= {_MAX_INT}"
    raise ValueError(f"Failed to parse value [{shown}] for setting [index.max_terms_count]{bound}")


def default_similarity(index: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The type of the index's ``similarity.default`` (BM25 when it names none) and its parameters."""
    similarity = index.get("similarity", {})
    default = similarity.get("default", {}) if isinstance(similarity, Mapping) else {}
    if not isinstance(default, Mapping):
        return str(default), {}
    return str(default.get("type", "BM25")), default


def length_weight(index: Mapping[str, Any]) -> float:
    """BM25's b in the index's ``similarity.default`` (Lucene's 0.75 when it names none)."""
    kind, default = default_similarity(index)
    if kind.upper() != "BM25":
        return 0.75  # (refused at creation: ``check_created``)
    value = default.get("b", 0.75)
    try:
        b = float(value)
    except (TypeError, ValueError):
        b = -1.0
    if isinstance(value, bool) or not 0.0 <= b <= 1.0:
        raise ValueError(f"index.similarity.default.b must be a number from 0 to 1, got {value!r}")
    return b


def check_created(index: Mapping[str, Any]) -> None:
    """Refuse (ValueError) the settings of an index created now that the embedded engine cannot honour."""
    kind, _ = default_similarity(index)
    if kind.upper() != "BM25":
        raise ValueError(f"index.similarity.default: the embedded engine scores text with BM25, not {kind!r}")
    max_terms_count(index, strict=True)
