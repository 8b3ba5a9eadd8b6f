"""The checks of a mapping's fields when an index is created or a field added: what the embedded engine would index,
score or analyse otherwise than a cluster is refused, naming the field."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from esbridge.engines.embedded.analysis import UnsupportedAnalysis, check_defaults, check_options
from esbridge.engines.embedded.dates import DEFAULT_FORMAT, format_parts


class MappingError(ValueError):
    """A mapping the embedded engine cannot hold."""


_UNREAD_OPTIONS = {"copy_to": None, "null_value": None, "normalizer": None, "ignore_malformed": False, "coerce": True}
"""Field parameters the embedded engine does not implement, each with the value that changes nothing."""


def _neutral(value: Any, default: bool | None) -> bool:
    if default is None:
        return value is None or value == [] or value == ""
    return str(value).strip().lower() == str(default).lower()  # (settings read back from a cluster hold strings)


def check_fields(properties: Mapping[str, Any], analysis: Any) -> None:
    """Refuse fields the embedded engine would score or analyse otherwise than a cluster: a similarity of their own,
    a search analyzer other than their analyzer, an analyzer option it does not implement (``check_options``). An
    index created before these checks keeps what it has."""
    for path, spec in _fields(properties, ()):
        named = spec.get("similarity", "default")
        # A dense_vector's similarity is its vector space, not a text scoring: its type is what is refused.
        if named != "default" and spec.get("type") != "dense_vector":
            raise MappingError(
                f"field {path!r}: similarity {named!r} (the embedded engine scores every text field with the "
                "index's default similarity)"
            )
        analyzer = spec.get("analyzer")
        for key in ("search_analyzer", "search_quote_analyzer"):
            if spec.get(key, analyzer) != analyzer:
                raise MappingError(
                    f"field {path!r}: {key} {spec[key]!r} differs from its analyzer {analyzer or 'standard'!r} (the "
                    "embedded engine analyses queries with the field's analyzer)"
                )
        for option, neutral in _UNREAD_OPTIONS.items():
            if option in spec and not _neutral(spec[option], neutral):
                raise MappingError(
                    f"field {path!r}: {option} {spec[option]!r} is not implemented by the embedded engine (it would "
                    "index the field's values otherwise than a cluster)"
                )
        if spec.get("type") == "scaled_float":
            if "scaling_factor" not in spec:
                raise MappingError(f"field {path!r}: Field [scaling_factor] is required")
            if scaling_factor(spec) is None:
                raise MappingError(
                    f"field {path!r}: [scaling_factor] must be a positive number, got [{spec['scaling_factor']}]"
                )
        if spec.get("type") == "date" and "format" in spec:
            try:
                format_parts(spec["format"])
            except ValueError as exc:
                raise MappingError(f"date field {path!r}: {exc}") from None
        if spec.get("type") == "text" and isinstance(analysis, Mapping):
            try:
                check_options(analyzer, analysis)
                check_defaults(analyzer, analysis)
            except UnsupportedAnalysis as exc:
                raise MappingError(f"field {path!r}: unsupported analysis: {exc}") from None


def scaling_factor(spec: Mapping[str, Any]) -> float | None:
    """A ``scaled_float``'s ``scaling_factor`` (a positive number, or its text); None when it has none such."""
    value = spec.get("scaling_factor")
    if isinstance(value, bool):
        return None
    try:
        factor = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return factor if math.isfinite(factor) and factor > 0 else None


def _fields(properties: Mapping[str, Any], parent: tuple[str, ...]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, definition) of every field and sub-field in ``properties``."""
    if not isinstance(properties, Mapping):
        return  # (refused by ``Schema``)
    for name, spec in properties.items():
        if not isinstance(spec, Mapping):
            continue
        path = ".".join((*parent, name))
        yield path, spec
        for sub, sub_spec in (spec.get("fields") or {}).items():
            if isinstance(sub_spec, Mapping):
                yield f"{path}.{sub}", sub_spec
        yield from _fields(spec.get("properties", {}), (*parent, name))


_FIXED = {
    "format": DEFAULT_FORMAT,
    "analyzer": "default",
    "dimension": None,
    "method": None,
    "enabled": True,
    "scaling_factor": None,
}
"""Field parameters a cluster does not let a mapping update change, each with the value a field without it has."""


def check_update(name: str, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> None:
    """Refuse (MappingError, in OpenSearch's words) a mapping update that changes a parameter of the existing field
    ``name`` that a cluster cannot change, its sub-fields and object properties included. A parameter left out is
    kept."""
    for option, default in _FIXED.items():
        if option in wanted:
            before, after = current.get(option, default), wanted[option]
            changed = str(before).lower() != str(after).lower() if isinstance(default, bool) else before != after
            if changed:
                raise MappingError(
                    f"Mapper for [{name}] conflicts with existing mapper: Cannot update parameter [{option}] from "
                    f"[{before}] to [{after}]"
                )
    for key in ("fields", "properties"):
        inner, changes = current.get(key), wanted.get(key)
        if isinstance(inner, Mapping) and isinstance(changes, Mapping):
            for child, spec in changes.items():
                if isinstance(inner.get(child), Mapping) and isinstance(spec, Mapping):
                    _check_type(f"{name}.{child}", inner[child], spec)
                    check_update(f"{name}.{child}", inner[child], spec)


def _check_type(name: str, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> None:
    before, after = (spec.get("type", "object" if "properties" in spec else None) for spec in (current, wanted))
    if after is not None and before != after:
        raise MappingError(f"mapper [{name}] cannot be changed from type [{before}] to [{after}]")
