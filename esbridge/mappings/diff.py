"""What separates a live index from the mapping esbridge would create now, and what may be applied.

Engines echo mappings and settings back with their own normalisation (numbers as strings, defaults
added), so comparison asks only whether each value esbridge sets is present and equal in the live
index. A new field or sub-field can be added in place; any other difference needs a new index version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["add", "change", "extra"]

# Settings esbridge sets whose change needs a new index (static settings, or analysis of indexed text).
_STATIC_SETTINGS = ("number_of_shards", "knn", "similarity", "analysis")


@dataclass(frozen=True)
class Change:
    path: str
    kind: ChangeKind
    live: Any
    wanted: Any

    @property
    def needs_new_version(self) -> bool:
        return self.kind == "change"

    def describe(self) -> str:
        if self.kind == "add":
            return f"+ {self.path}: {_short(self.wanted)}"
        if self.kind == "extra":
            return f"  {self.path}: only in the live index (kept; a reindex drops it)"
        return f"~ {self.path}: {_short(self.live)} -> {_short(self.wanted)} (needs a new index version)"


@dataclass(frozen=True)
class MappingDiff:
    changes: tuple[Change, ...]

    @property
    def additions(self) -> dict[str, Any]:
        """New top-level fields and new sub-fields, as ``properties`` for a put-mapping request."""
        properties: dict[str, Any] = {}
        for change in self.changes:
            if change.kind != "add" or not change.path.startswith("mappings.properties."):
                continue
            parts = change.path.removeprefix("mappings.properties.").split(".")
            if len(parts) == 1:
                properties[parts[0]] = change.wanted
            elif len(parts) == 3 and parts[1] == "fields":
                field = properties.setdefault(parts[0], dict(change.live or {}))
                field.setdefault("fields", {})[parts[2]] = change.wanted
        return properties

    @property
    def needs_new_version(self) -> list[Change]:
        return [change for change in self.changes if change.needs_new_version]

    @property
    def is_empty(self) -> bool:
        return not any(change.kind != "extra" for change in self.changes)


def diff_index(
    live_mappings: Mapping[str, Any],
    live_settings: Mapping[str, Any],
    wanted_mappings: Mapping[str, Any],
    wanted_settings: Mapping[str, Any],
) -> MappingDiff:
    """Compare a live index (mappings, ``index`` settings) with the wanted create-index body parts."""
    changes: list[Change] = []
    live_props = live_mappings.get("properties", {})
    for name, wanted in wanted_mappings.get("properties", {}).items():
        path = f"mappings.properties.{name}"
        if name not in live_props:
            changes.append(Change(path, "add", None, wanted))
            continue
        changes.extend(_field_changes(path, live_props[name], wanted))
    for name in live_props:
        if name not in wanted_mappings.get("properties", {}):
            changes.append(Change(f"mappings.properties.{name}", "extra", live_props[name], None))
    if "dynamic" in wanted_mappings and not _same(live_mappings.get("dynamic"), wanted_mappings["dynamic"]):
        changes.append(Change("mappings.dynamic", "change", live_mappings.get("dynamic"), wanted_mappings["dynamic"]))
    wanted_index = wanted_settings.get("index", wanted_settings)
    for key in _STATIC_SETTINGS:
        if key in wanted_index:
            changes.extend(_value_changes(f"settings.index.{key}", live_settings.get(key), wanted_index[key]))
    return MappingDiff(tuple(changes))


def _field_changes(path: str, live: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    for key, value in wanted.items():
        if key == "fields":
            live_fields = live.get("fields", {})
            for sub, sub_wanted in value.items():
                sub_path = f"{path}.fields.{sub}"
                if sub not in live_fields:
                    changes.append(Change(sub_path, "add", live, sub_wanted))
                else:
                    changes.extend(_value_changes(sub_path, live_fields[sub], sub_wanted))
        else:
            changes.extend(_value_changes(f"{path}.{key}", live.get(key), value))
    return changes


def _value_changes(path: str, live: Any, wanted: Any) -> list[Change]:
    if isinstance(wanted, Mapping):
        if not isinstance(live, Mapping):
            return [Change(path, "change", live, wanted)]
        changes: list[Change] = []
        for key, value in wanted.items():
            changes.extend(_value_changes(f"{path}.{key}", live.get(key), value))
        return changes
    return [] if _same(live, wanted) else [Change(path, "change", live, wanted)]


def _same(live: Any, wanted: Any) -> bool:
    if isinstance(wanted, list) and isinstance(live, list):
        return len(live) == len(wanted) and all(_same(a, b) for a, b in zip(live, wanted, strict=True))
    return _scalar(live) == _scalar(wanted)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value.lower() if value.lower() in ("true", "false") else value
        return str(int(number)) if number.is_integer() else str(number)
    return str(value)


def _short(value: Any, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
