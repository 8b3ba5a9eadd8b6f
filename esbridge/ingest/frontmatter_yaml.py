"""How a frontmatter block's YAML is read (the rules are listed in ``esbridge.ingest.frontmatter``'s docstring).

A boolean is a ``WrittenBool``: its value and its text as written, so that where it ends up as text (a tag, a
status) it is the word the note has (``true``, ``TRUE``, or ``yes`` tagged ``!!bool``), not Python's ``True``,
while metadata stores the boolean. A value tagged ``!!bool`` that is no YAML boolean (``!!bool maybe``) stays its
text.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml


class WrittenBool:
    """A YAML boolean and its text as written; equal to the boolean (and hashed as it), true when it is."""

    __slots__ = ("text", "value")

    def __init__(self, value: bool, text: str) -> None:
        self.value, self.text = value, text

    def __bool__(self) -> bool:
        return self.value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (WrittenBool, bool)):
            return self.value == bool(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return self.text


_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontmatterLoader(_SAFE_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader, but an impossible date (``2021-13-40``) stays its text instead of failing the whole
    frontmatter: only that key is then unusable (a warning, kept in metadata), not the title and tags; and a
    key is the text written."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # Keys become text anyway; built as values, ``1``, ``1.0`` and ``true`` are one key to Python, and
        # ``null`` and ``None`` one once made text, so one value would replace another without a word.
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else self.construct_object(key_node, deep)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep)
        return mapping


def _timestamp_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    try:
        return loader.construct_yaml_timestamp(node)
    except ValueError:
        return loader.construct_scalar(node)


def _bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> WrittenBool | str:
    text = str(loader.construct_scalar(node))
    value = loader.bool_values.get(text.lower())
    return text if value is None else WrittenBool(value, text)


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    return int(text[2:], 16) if text.startswith("0x") else int(text, 10)


FrontmatterLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_or_text)
FrontmatterLoader.add_constructor("tag:yaml.org,2002:int", _int)
FrontmatterLoader.add_constructor("tag:yaml.org,2002:bool", _bool)
# Booleans as YAML 1.2 (Obsidian) reads them, numbers only where YAML 1.1 and 1.2 agree (the module's docstring).
_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
FrontmatterLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
    for first, resolvers in _SAFE_LOADER.yaml_implicit_resolvers.items()
}
FrontmatterLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
FrontmatterLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
FrontmatterLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+.0123456789"),
)
