"""The keys of a mapping's root object, checked when an index is created: a key no cluster knows is refused in
OpenSearch's words; one a cluster knows but the embedded engine does not implement is refused, naming it, unless
leaving it unread indexes, stores and answers as the cluster would."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from esbridge.engines.embedded.field_checks import MappingError

_DYNAMIC = frozenset({"true", "false", "strict"})

_DYNAMIC_MAPPING_ONLY = frozenset({"date_detection", "numeric_detection", "dynamic_date_formats"})
"""Keys that only tune how a cluster maps a field it meets in a document (dynamic mapping): the embedded engine
maps none, keeping such a field in ``_source`` only whatever they say (docs/embedded-differences.md)."""

_NEUTRAL = {
    "_source": {"enabled": True, "mode": "stored", "includes": [], "excludes": []},
    "_routing": {"required": False},
    "_field_names": {"enabled": True},
    "enabled": True,
    "subobjects": True,
    "_data_stream_timestamp": {"enabled": False},
    "_doc_count": {},
    "composite": {},
}
"""Keys the embedded engine does not implement, with the values that change nothing: another value would have a
cluster store or answer otherwise (no ``_source``, writes refused without a routing, nothing indexed)."""

_EMPTY_ONLY = {
    "runtime": "runtime fields are not implemented by the embedded engine",
    "derived": "derived fields are not implemented by the embedded engine",
}
"""Fields a cluster computes at search time: a query on one here would match nothing."""

_KNOWN = frozenset(
    {"properties", "dynamic", "_meta", "dynamic_templates", *_DYNAMIC_MAPPING_ONLY, *_NEUTRAL, *_EMPTY_ONLY}
)


_NOT_CONFIGURABLE = frozenset({"_id", "_index", "_ignored", "_seq_no", "_version", "_primary_term", "_nested_path"})


def check_root(mappings: Mapping[str, Any]) -> None:
    """Refuse a root key of ``mappings`` that no cluster knows, or one the embedded engine would leave unread where
    a cluster would index, store or answer otherwise."""
    fixed = sorted(key for key in mappings if key in _NOT_CONFIGURABLE)
    if fixed:
        raise MappingError(f"Failed to parse mapping [_doc]: {fixed[0]} is not configurable")
    unknown = sorted(key for key in mappings if key not in _KNOWN)
    if unknown:
        listed = "".join(f" [{key} : {_java(mappings[key])}]" for key in unknown)
        raise MappingError(
            f"Failed to parse mapping [_doc]: Root mapping definition has unsupported parameters: {listed}"
        )
    dynamic = _dynamic(mappings.get("dynamic", True))
    for key, why in _EMPTY_ONLY.items():
        if mappings.get(key):
            raise MappingError(f"{key} fields {', '.join(sorted(mappings[key]))}: {why}")
    for key, neutral in _NEUTRAL.items():
        if key in mappings and not _is_neutral(mappings[key], neutral):
            raise MappingError(
                f"mapping {key} {json.dumps(mappings[key])} is not implemented by the embedded engine (a cluster would "
                "store, index or answer otherwise); leave it out"
            )
    if mappings.get("dynamic_templates") and dynamic == "true":
        # With dynamic false or strict a cluster applies no template either.
        names = [
            name for template in mappings["dynamic_templates"] if isinstance(template, Mapping) for name in template
        ]
        raise MappingError(
            f"dynamic_templates ({', '.join(names)}) are not implemented by the embedded engine: a field they would "
            "map is kept in _source only, not indexed; map the fields in properties, or set dynamic to false or strict"
        )


def _dynamic(value: Any) -> str:
    text = str(value).lower()
    if text not in _DYNAMIC:
        raise MappingError(
            f"dynamic {value!r} is not implemented by the embedded engine (it takes true, false, strict)"
        )
    return text


def _is_neutral(value: Any, neutral: Any) -> bool:
    if isinstance(neutral, Mapping):
        return isinstance(value, Mapping) and all(
            key in neutral and _same(given, neutral[key]) for key, given in value.items()
        )
    return _same(value, neutral)


def _same(value: Any, neutral: Any) -> bool:
    return str(value).strip().lower() == str(neutral).lower()  # (read back from a cluster, booleans may be strings)


def _java(value: Any) -> str:
    """``value`` as a cluster writes it in that refusal (Java's ``toString``: ``{enabled=true}``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}={_java(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_java(item) for item in value) + "]"
    return "null" if value is None else str(value)
