"""The mapping an attached index is read by: its own, or the one every index behind its name shares.

An alias over indices split by time (``logs-2026.10``, ``logs-2026.11``), or a data stream once rolled over,
is searched as one; a field map is sound for all of them only when they map its fields alike, so indices
whose mappings differ are refused, naming each field that differs and how.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from esbridge import errors
from esbridge.attach.proposal import flatten
from esbridge.engines.base import Engine

_SHOWN = 3
"""Differing fields named in a refusal; the rest are counted."""


def attached_mapping(engine: Engine, index: str) -> dict[str, Any]:
    """The mapping of ``index``, or of the indices behind the alias or data stream ``index`` when they all map
    alike."""
    mappings = engine.get_mappings(index)
    if len(mappings) == 1:
        return dict(next(iter(mappings.values())))
    return common_mapping(index, mappings)


def common_mapping(name: str, mappings: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The mapping all of ``mappings`` (index name -> mapping) share, ``_meta`` aside; an error naming the
    fields they map differently."""
    fields = {name: _fields(mappings[name]) for name in sorted(mappings)}
    names = sorted({field for by_field in fields.values() for field in by_field})
    differing = [
        f"{field} ({_how(field, fields)})"
        for field in names
        if len({repr(by_field.get(field)) for by_field in fields.values()}) > 1
    ]
    others = sorted(
        {
            key
            for mapping in mappings.values()
            for key in mapping
            if key not in ("properties", "runtime", "_meta")
            and len({repr(other.get(key)) for other in mappings.values()}) > 1
        }
    )
    if differing or others:
        shown = differing[:_SHOWN] + ([f"{len(differing) - _SHOWN} more"] if len(differing) > _SHOWN else [])
        what = "; ".join(shown + [f"{key} differs" for key in others])
        raise errors.AmbiguousAlias(
            f"{name!r} covers {len(mappings)} indices ({', '.join(sorted(mappings))}) whose mappings differ: "
            f"{what}. A field map is read against one mapping: attach indices mapped alike (point an alias at "
            "them), or one of them (--index NAME)"
        )
    return dict(next(iter(mappings.values())))


def _fields(mapping: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = dict(flatten(mapping.get("properties") or {}))
    runtime = mapping.get("runtime") or {}
    found.update({f"{name} (runtime)": spec for name, spec in runtime.items() if isinstance(spec, Mapping)})
    return found


def _how(field: str, fields: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """How each index maps ``field``: its type, or the whole definition where the types agree."""
    kinds = {index: _kind(by_field.get(field)) for index, by_field in fields.items()}
    if len(set(kinds.values())) == 1:
        return ", ".join(f"{index}: {dict(by_field[field])}" for index, by_field in fields.items())
    return ", ".join(f"{index}: {kind or 'absent'}" for index, kind in kinds.items())


def _kind(definition: Mapping[str, Any] | None) -> str | None:
    return None if definition is None else str(definition.get("type", "object"))
