"""A note's YAML frontmatter, read leniently: what cannot be understood becomes a warning, never an error.

YAML is read as YAML 1.2 reads booleans: ``true`` and ``false`` are booleans, ``yes``, ``no``, ``on`` and ``off``
stay the text written. A boolean stays a boolean in ``metadata``; where it becomes text (title, tags, aliases,
status, type, category) it is the word written (``true``, ``TRUE``, ``yes`` tagged ``!!bool``), not ``True``. A
scalar is a number only where YAML 1.1 and YAML 1.2 read the same number; where they differ the text is kept:
``0755`` (octal 493 in YAML 1.1), ``12:30:45`` (base 60), ``1_000``, and ``09`` or ``1e5`` (9 and 100000.0 in
YAML 1.2). PyYAML alone follows YAML 1.1.

Dates may be ISO strings, YAML dates/timestamps, or epoch numbers (Dendron writes ``created`` and
``updated`` as epoch milliseconds); numbers above 2e10 are taken as milliseconds, smaller ones as seconds
(``calendar.from_epoch``, as for JSONL), but a year (``2024``, ``"2024"``) or a year and month (``2024-05``)
is its first day; an epoch number that is also a YYYYMMDD date (``20240501``) is warned about, naming both
readings. Naive datetimes are taken as UTC. Keys that are not understood, and understood keys whose
value cannot be used (a list as ``status``, ``created: someday``), go JSON-safe into ``metadata``.
A key is the text written (``true``, ``1.0`` and ``null`` as keys stay those words, not Python's True, 1.0 and
None, which would merge ``1: a`` and ``true: b`` into one key); a key given twice keeps its later value, with a
warning naming both lines.

A frontmatter that cannot be read as a mapping (invalid YAML: a tab indenting a key, ``title: *bold*``,
``a: b: c``; a list) is a warning, and its text as written is kept in ``metadata["frontmatter_text"]``, which
is searched as metadata text like any key, so no title, tag or date in it is lost to search.

Size. A frontmatter that stands for more than ``MAX_FRONTMATTER_VALUES`` values once its YAML aliases are
expanded (a "billion laughs"), or nests them more than ``MAX_FRONTMATTER_DEPTH`` levels deep, is ignored with
a warning, checked on the composed node graph before any value is built; metadata over ``MAX_METADATA_BYTES``
as JSON is dropped with a warning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timezone
from typing import Any

import yaml

from esbridge.ingest.calendar import epoch_number, from_epoch, is_year_or_month, year_or_month, yyyymmdd_warning
from esbridge.ingest.frontmatter_yaml import FrontmatterLoader, WrittenBool

_TITLE_KEYS = ("title",)
_TAG_KEYS = ("tags", "tag")
_ALIAS_KEYS = ("aliases", "alias")
_CREATED_KEYS = ("created", "created_at")
_MODIFIED_KEYS = ("modified", "updated", "modified_at")
_STATUS_KEYS = ("status",)
_ENTITY_TYPE_KEYS = ("entity_type", "type")
_CATEGORY_KEYS = ("category",)
# A date used only as a fallback for `created_at` (Jekyll/Hugo style); it also stays in metadata.
_FALLBACK_CREATED_KEY = "date"
# YAML aliases let a 1 KB block stand for millions of values ("billion laughs"); the loader shares
# them, but turning them into JSON copies each one. A frontmatter is refused past this many values
# once aliases are expanded, which no real note comes near.
MAX_FRONTMATTER_VALUES = 100_000
# Far deeper than a note needs, far shallower than what exhausts the recursion of later stages (as for JSONL).
MAX_FRONTMATTER_DEPTH = 100
# What a note may store as metadata (its frontmatter's other keys), serialized as JSON.
MAX_METADATA_BYTES = 64 * 1024
FRONTMATTER_TEXT = "frontmatter_text"
"""The metadata key of a frontmatter block that could not be read as a mapping, kept as written."""
UNREADABLE = "frontmatter is not "
"""How the warning about such a block begins (not the size refusals, whose text is not kept)."""


@dataclass(frozen=True)
class FrontMatter:
    title: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    created_at: datetime | None = None
    modified_at: datetime | None = None
    status: str | None = None
    entity_type: str | None = None
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def load_frontmatter(raw: str) -> tuple[Mapping[str, Any], list[str]]:
    """The YAML mapping of a frontmatter block, or an empty one and the reason it could not be read."""
    try:
        data, refused, repeated = _load_bounded(raw)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return {}, [f"{UNREADABLE}valid YAML{where}: {exc.problem or exc}"]
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        return {}, [f"{UNREADABLE}valid YAML: {exc}"]
    if refused is not None:
        return {}, [refused]
    if data is None:
        return {}, []
    if not isinstance(data, Mapping):
        return {}, [f"{UNREADABLE}a mapping of keys to values but a {type(data).__name__}"]
    return {str(key): value for key, value in data.items()}, repeated


def _load_bounded(raw: str) -> tuple[Any, str | None, list[str]]:
    """The YAML document, or why it was not built: it is composed first (aliases shared, cheap) and
    only constructed when its expanded size is within ``MAX_FRONTMATTER_VALUES``; and the warnings
    about keys it repeats."""
    loader = FrontmatterLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None, []
        size = expanded_size(node, MAX_FRONTMATTER_VALUES)
        if size is None:
            return None, "frontmatter refers to itself (a YAML alias inside its own anchor); ignored", []
        if size > MAX_FRONTMATTER_VALUES:
            return (
                None,
                f"frontmatter holds more than {MAX_FRONTMATTER_VALUES} values once its YAML aliases (*name) "
                "are expanded; ignored",
                [],
            )
        if nested_deeper(node, MAX_FRONTMATTER_DEPTH):
            return None, f"frontmatter nests values more than {MAX_FRONTMATTER_DEPTH} levels deep; ignored", []
        repeated = repeated_keys(node)  # before construction, which merges ``<<`` keys into the nodes
        return loader.construct_document(node), None, repeated
    finally:
        loader.dispose()


def repeated_keys(root: yaml.Node) -> list[str]:
    """A warning for each key a mapping gives twice (``1`` and ``'1'`` count as one: keys become text).

    YAML forbids it, yet PyYAML keeps the last value without a word, so the earlier one would vanish
    from the index unnoticed. Lines are the note's (the opening ``---`` is line 1)."""
    found: list[str] = []
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first_line: dict[str, int] = {}
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue
                line = key.start_mark.line + 2
                if key.value in first_line:
                    found.append(
                        f"frontmatter key {key.value!r} is given twice (lines {first_line[key.value]} and {line}); "
                        "the value on the later line is used, the earlier one is not indexed"
                    )
                else:
                    first_line[key.value] = line
        stack.extend(_children(node))
    return found


def nested_deeper(root: yaml.Node, limit: int) -> bool:
    """Whether ``root`` nests deeper than ``limit``; iterative, for a graph already known to be finite and acyclic."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in _children(node))
    return False


def expanded_size(root: yaml.Node, limit: int) -> int | None:
    """How many nodes ``root`` stands for with every alias expanded, counted up to just past ``limit``;
    ``None`` when a node contains itself (it would expand without end)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int | None:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            return None
        open_nodes.add(key)
        total = 1
        for child in _children(node):
            counted = size(child)
            if counted is None:
                return None
            total += counted
            if total > limit:
                break
        open_nodes.discard(key)
        sizes[key] = total
        return total

    return size(root)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def interpret_frontmatter(data: Mapping[str, Any]) -> tuple[FrontMatter, list[str]]:
    """The fields a Document has, read from the frontmatter; values that cannot be used stay in metadata."""
    warnings: list[str] = []
    used: set[str] = set(_TAG_KEYS + _ALIAS_KEYS)

    def scalar(keys: Sequence[str]) -> str | None:
        for key in keys:
            value = data.get(key)
            if value is None or value == "":
                used.add(key)
                continue
            if isinstance(value, (str, int, float, bool, date, WrittenBool)):
                used.add(key)
                return written(value).strip() or None
            warnings.append(f"frontmatter {key!r} should be a single value, not a {type(value).__name__}")
        return None

    def moment(keys: Sequence[str]) -> datetime | None:
        for key in keys:
            value = data.get(key)
            if value is None or value == "":
                used.add(key)
                continue
            parsed = parse_datetime(value)
            if parsed is not None:
                used.add(key)
                doubt = yyyymmdd_warning(f"frontmatter {key!r}", value, parsed)
                warnings.extend([doubt] if doubt else [])
                return parsed
            warnings.append(f"frontmatter {key!r} is not a date: {value!r}")
        return None

    def strings(keys: Sequence[str], *, split_spaces: bool, what: str) -> list[str]:
        found: list[str] = []
        for key in keys:
            value = data.get(key)
            if _holds_mapping(value):
                used.discard(key)
                warnings.append(f"frontmatter {key!r} holds a mapping, which is no {what}; kept in metadata")
            found.extend(string_list(value, split_spaces=split_spaces))
        return found

    created_at = moment(_CREATED_KEYS)
    if created_at is None and data.get(_FALLBACK_CREATED_KEY) is not None:
        created_at = parse_datetime(data[_FALLBACK_CREATED_KEY])
    front = FrontMatter(
        title=scalar(_TITLE_KEYS),
        tags=tuple(tag.lstrip("#") for tag in strings(_TAG_KEYS, split_spaces=True, what="tag")),
        aliases=tuple(strings(_ALIAS_KEYS, split_spaces=False, what="alias")),
        created_at=created_at,
        modified_at=moment(_MODIFIED_KEYS),
        status=scalar(_STATUS_KEYS),
        entity_type=scalar(_ENTITY_TYPE_KEYS),
        category=scalar(_CATEGORY_KEYS),
    )
    metadata = {key: json_safe(value) for key, value in data.items() if key not in used}
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        warnings.append(
            f"frontmatter metadata (the keys that are not note fields) is {size / 1024:.1f} KiB as JSON, over the "
            f"{MAX_METADATA_BYTES / 1024:.1f} KiB a note may store; dropped, the note is indexed without it"
        )
        metadata = {}
    return replace(front, metadata=metadata), warnings


def string_list(value: Any, *, split_spaces: bool) -> list[str]:
    """A YAML list, or a comma-separated string (space-separated too for tags), as stripped strings."""
    if value is None:
        return []
    if isinstance(value, str):
        separators = value.replace(",", " ").split() if split_spaces else value.split(",")
        return [part.strip() for part in separators if part.strip()]
    return _items(value)


def _items(value: Any) -> list[str]:
    """Each scalar of a value as stripped text, without splitting it; a list inside the list (``tags: [[a,
    b]]`` to YAML) gives its items, not its Python text, and a mapping gives none (it is no tag or alias)."""
    if value is None or isinstance(value, Mapping):
        return []
    if isinstance(value, (list, tuple, set)):
        return [text for item in value for text in _items(item)]
    return [text] if (text := written(value).strip()) else []


def written(value: Any) -> str:
    """A scalar as text: a YAML boolean as the note writes it (``true``, ``yes`` tagged ``!!bool``)."""
    return value.text if isinstance(value, WrittenBool) else str(value)


def _holds_mapping(value: Any) -> bool:
    if isinstance(value, Mapping):
        return True
    return isinstance(value, (list, tuple, set)) and any(_holds_mapping(item) for item in value)


def parse_datetime(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime from a YAML date, datetime, ISO string or epoch (s or ms) number."""
    if isinstance(value, bool):
        return None
    if is_year_or_month(value):
        return year_or_month(value)
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
    number = epoch_number(value)
    if number is not None:
        return from_epoch(number)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return _as_utc(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def _as_utc(moment: datetime) -> datetime | None:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31T23:00-05:00 is valid where written but after year 9999 in UTC
        return None


def json_safe(value: Any) -> Any:
    """The value with dates as ISO strings and anything else JSON cannot hold as a string."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, WrittenBool):
        return value.value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [json_safe(item) for item in items]
    return str(value)
