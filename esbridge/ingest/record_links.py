"""Links of a JSONL or BEIR record, with optional weights, read from the record's top level or its ``metadata``.

Three spellings, each at the top level or under ``metadata`` (the top level wins when both have one, and a
different value under ``metadata`` then stays in the document's metadata)::

    "links": ["b", "c"]                                   every link weighs 1
    "links": [{"id": "b", "weight": 3}, "c"]              a weight per link; a bare id weighs 1
    "links": ["b", "c"], "link_weights": {"b": 3}         weights beside the list; unnamed links weigh 1

A weight is a finite number > 0 (how strongly the two documents are tied: co-citations, shared
authors, clicks). A target named twice keeps its largest weight. ``link_weights`` may not name a
target that ``links`` lacks: a weight without its link is most likely a mistake in the data, and
guessing either way would change the graph silently. A link object's own ``weight`` is the more specific
one: ``link_weights`` does not override it, and a warning names the link when the two disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from esbridge.ingest.json_values import describe_value
from esbridge.ingest.model import Document, Problem

LINKS = "links"
LINK_WEIGHTS = "link_weights"
LINK_KEYS = (LINKS, LINK_WEIGHTS)
"""The keys this module consumes; a source leaves them out of a document's metadata."""


@dataclass(frozen=True)
class RecordLinks:
    """The targets in first-seen order, the weight of each target whose weight is not 1, and what was
    noticed on the way (a link whose own weight and ``link_weights`` disagree)."""

    targets: tuple[str, ...] = ()
    weights: Mapping[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def weight(self, target: str) -> float:
        return self.weights.get(target, 1.0)


def read_links(data: Mapping[str, Any]) -> RecordLinks:
    """The links of one record (a JSON object); ``ValueError`` naming the field when they are malformed."""
    metadata = data.get("metadata")
    nested = metadata if isinstance(metadata, Mapping) else {}
    links_at = _where(data, nested, LINKS)
    weights_at = _where(data, nested, LINK_WEIGHTS)
    found: dict[str, float] = {}
    own: set[str] = set()  # targets given as a link object with a weight of its own
    warnings: list[str] = []
    if links_at is not None:
        links_place, value = links_at
        found, own = _link_list(value, links_place)
    if weights_at is not None:
        place, value = weights_at
        for target, weight in _weight_map(value, place).items():
            if target not in found:
                raise ValueError(f"field {place!r}: weight given for {target!r}, which is not in the links")
            if target not in own:
                found[target] = weight
            elif weight != found[target]:
                warnings.append(
                    f"link {target!r} weighs {found[target]:g} in {links_place!r} and {weight:g} in {place!r}; "
                    "kept the link's own weight"
                )
    weights = {target: weight for target, weight in found.items() if weight != 1.0}
    return RecordLinks(tuple(found), weights, tuple(warnings))


def without_link_keys(metadata: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` without the keys ``read_links`` consumed: they live in the document's links now. A key the
    top level ``top`` shadows with another value was not read; it stays, so the record loses nothing."""
    return {
        key: value
        for key, value in metadata.items()
        if key not in LINK_KEYS or (top.get(key) is not None and top[key] != value)
    }


def _where(data: Mapping[str, Any], nested: Mapping[str, Any], key: str) -> tuple[str, Any] | None:
    if data.get(key) is not None:
        return key, data[key]
    if nested.get(key) is not None:
        return f"metadata.{key}", nested[key]
    return None


def _link_list(value: Any, place: str) -> tuple[dict[str, float], set[str]]:
    """The targets with their weights, and those whose weight a link object gave."""
    if not isinstance(value, list):
        raise ValueError(f"field {place!r}: expected a list of ids or {{'id', 'weight'}} objects")
    found: dict[str, float] = {}
    own: set[str] = set()
    for index, item in enumerate(value):
        where = f"{place}[{index}]"
        if isinstance(item, Mapping):
            unknown = sorted(set(item) - {"id", "weight"})
            if unknown:
                raise ValueError(f"field {where!r}: unknown key {unknown[0]!r}; a link object has 'id' and 'weight'")
            target = _target(item.get("id"), f"{where}.id")
            weight = _weight(item.get("weight", 1.0), f"{where}.weight")
            if "weight" in item:
                own.add(target)
        else:
            target, weight = _target(item, where), 1.0
        found[target] = max(weight, found.get(target, weight))
    return found, own


def _weight_map(value: Any, place: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ValueError(f"field {place!r}: expected an object of {{doc id: weight}}")
    return {_target(key, place): _weight(weight, f"{place}.{key}") for key, weight in value.items()}


def _target(value: Any, where: str) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(
        f"field {where!r}: a link target must be a non-empty string or an integer, got {describe_value(value)}"
    )


def _weight(value: Any, where: str) -> float:
    number = _as_float(value)
    if number is None or not math.isfinite(number) or number <= 0:
        raise ValueError(f"field {where!r}: a link weight must be a finite number > 0, got {describe_value(value)}")
    return number


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # a JSON integer beyond the largest float
        return None


def consume_links(data: Any) -> Any:
    """A record's raw JSON with its links read into one ``RecordLinks`` under ``links`` and the link keys
    taken out of it and of its ``metadata``: the ``mode="before"`` step of the JSONL and BEIR record models."""
    if not isinstance(data, Mapping):
        return data
    links = read_links(data)
    consumed = {key: value for key, value in data.items() if key not in LINK_KEYS}
    if isinstance(data.get("metadata"), Mapping):
        consumed["metadata"] = without_link_keys(data["metadata"], data)
    consumed[LINKS] = links
    return consumed


@dataclass(frozen=True)
class ResolvedLinks:
    """What a source puts into a ``Document``: links to records of the same source, their weights, the
    rest for ``metadata`` (``unresolved_links``, with ``unresolved_link_weights`` when weighted) and the
    warnings of reading them."""

    links: tuple[str, ...]
    weights: dict[str, float]
    metadata: dict[str, Any]
    warnings: tuple[str, ...] = ()

    def computed_over(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``metadata``, with the empty value of each key it computes as nothing that ``given`` holds: a record
        written back after its links resolved would otherwise keep its old ``unresolved_links`` as true."""
        return {**{key: empty for key, empty in _NOTHING_UNRESOLVED.items() if key in given}, **self.metadata}


_NOTHING_UNRESOLVED: dict[str, Any] = {"unresolved_links": [], "unresolved_link_weights": {}}


def resolve_links(record_id: str, links: RecordLinks, known_ids: set[str]) -> ResolvedLinks:
    """Split ``links`` into targets that are records of the source (self-links dropped) and unresolved ones."""
    kept = tuple(target for target in links.targets if target in known_ids and target != record_id)
    unresolved = [target for target in links.targets if target not in known_ids]
    metadata: dict[str, Any] = {}
    if unresolved:
        metadata["unresolved_links"] = unresolved
        weighted = {target: links.weights[target] for target in unresolved if target in links.weights}
        if weighted:
            metadata["unresolved_link_weights"] = weighted
    weights = {target: links.weights[target] for target in kept if target in links.weights}
    return ResolvedLinks(kept, weights, metadata, links.warnings)


class LinkedRecord(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def links(self) -> RecordLinks: ...


Record = TypeVar("Record", bound=LinkedRecord)


def documents_with_links(
    read: Callable[[], Iterable[Record | Problem]], document: Callable[[Record, set[str]], Document]
) -> Iterator[Document | Problem]:
    """``document(record, known ids)`` for each record ``read()`` yields, problems passed through. Resolving
    links needs every id of the source, so the first record with links makes a second pass for them. The id
    a problem names counts: what was indexed for it is kept, so links to it must not be lost."""
    known: set[str] | None = None
    for item in read():
        if isinstance(item, Problem):
            yield item
            continue
        if item.links.targets and known is None:
            known = {found for found in map(_id_of, read()) if found is not None}
        yield document(item, known or set())


def _id_of(item: LinkedRecord | Problem) -> str | None:
    return item.doc_id if isinstance(item, Problem) else item.id
