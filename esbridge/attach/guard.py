"""What keeps an attached index safe and its searches sound: the read-only refusal, the dimension and space checks."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from esbridge import errors
from esbridge.attach.proposal import (
    DATE_TYPES,
    KEYWORD_TYPES,
    RUNTIME_UNREAD,
    TEXT_TYPES,
    VectorInfo,
    flatten,
    vector_info,
)
from esbridge.attach.targets import attached_mapping
from esbridge.config.fields import WRITE_ATTACHED_FLAG, FieldMap
from esbridge.config.settings import Settings
from esbridge.engines.base import Engine
from esbridge.query.engine_dates import DEFAULT_FORMAT

logger = logging.getLogger(__name__)


def refuse_write(index: str, attached: bool, allowed: bool, what: str) -> None:
    """Refuse ``what`` (an ingest, a reindex, a mapping change) on an attached index unless ``allowed``."""
    if attached and not allowed:
        raise errors.ReadOnlyIndex(
            f"index {index} is attached (it has a [fields.{index}] field map): esbridge does not {what} it "
            f"unless told to with {WRITE_ATTACHED_FLAG}; nothing was changed"
        )


def mapped_vector(mapping: Mapping[str, Any], vector: str) -> VectorInfo:
    """What the index's mapping gives ``vector``; an error when the field is missing or no vector."""
    for name, definition in flatten(mapping.get("properties") or {}):
        if name == vector:
            if definition.get("type") not in ("knn_vector", "dense_vector"):
                raise errors.ConfigError(
                    f"the field map's vector field {vector} is a {definition.get('type')} field, not a vector field"
                )
            return vector_info(name, definition)
    raise errors.ConfigError(f"the field map's vector field {vector} is not in the index's mapping")


def mapped_dimension(mapping: Mapping[str, Any], vector: str) -> int | None:
    """The dimension the index's mapping gives ``vector``; an error when the field is missing or no vector."""
    return mapped_vector(mapping, vector).dimension


def preflight(settings: Settings, engine: Engine, embedder_dimension: int | None) -> Settings:
    """For an attached index, ``check_fields``, ``check_dimension``, ``check_date_format`` and ``check_space``
    against its live mapping: the settings to search with (the date format and the vector space the mapping
    gives, when the field map names none).
    esbridge's own index: ``settings`` as they are."""
    if not settings.attached:
        return settings
    mapping = attached_mapping(engine, settings.index)
    check_fields(settings.index, settings.field_map, mapping)
    check_dimension(settings.index, settings.field_map, mapping, embedder_dimension)
    fields = check_space(settings.index, check_date_format(settings.index, settings.field_map, mapping), mapping)
    if fields is settings.field_map:
        return settings
    return settings.model_copy(update={"fields": {**settings.fields, settings.index: fields}})


def check_date_format(index: str, fields: FieldMap, mapping: Mapping[str, Any]) -> FieldMap:
    """The field map with the date field's format as the mapping gives it.

    Recency reads stored dates in ``date_format``; a field map written before it existed (or by hand) may
    name none, and an ``epoch_second`` date read as milliseconds falls in 1970 without a word. With no
    ``date_format``, the mapping's is taken, with a warning saying how to record it; one that disagrees
    with the mapping is refused, naming both.
    """
    if fields.date is None:
        return fields
    mapped = next(
        (definition for name, definition in flatten(mapping.get("properties") or {}) if name == fields.date), None
    )
    if mapped is None or mapped.get("type") not in DATE_TYPES:
        return fields
    given = _explicit(fields.date_format)
    actual = _explicit(str(mapped.get("format") or ""))
    if given == actual:
        return fields
    if given is None:
        logger.warning(
            "[fields.%s] names no date_format, but the mapping gives %s the format %s: recency reads its dates in "
            'it; record it with date_format = "%s" in [fields.%s] (or `esbridge index inspect %s --write`)',
            index,
            fields.date,
            actual,
            actual,
            index,
            index,
        )
        return fields.model_copy(update={"date_format": actual})
    raise errors.ConfigError(
        f"[fields.{index}] says date_format = {given!r}, but the index maps {fields.date} with the format "
        f"{actual or DEFAULT_FORMAT!r}: recency would misread its dates; set date_format to the mapping's format "
        f"(run `esbridge index inspect {index}` to see it)"
    )


def _explicit(formats: str | None) -> str | None:
    """A date format other than the engines' default; None for the default or none."""
    return formats if formats and formats != DEFAULT_FORMAT else None


_SEARCHED_ROLES = ("id", "path", "date", "created", "type", "status", "category", "tags", "links")


_VALUE_ROLES = ("id", "path", "type", "status", "category", "tags", "links")
"""Roles the engine matches by whole value (``terms``): on an analyzed text field they would match words."""


def searchable_fields(mapping: Mapping[str, Any]) -> dict[str, str | None]:
    """The dotted names a query can reach, with their types: fields, objects followed into, and multi-fields
    (``tags.keyword``)."""
    names: dict[str, str | None] = {}
    for name, definition in flatten(mapping.get("properties") or {}):
        names[name] = definition.get("type")
        sub = definition.get("fields")
        if isinstance(sub, Mapping):
            names.update(
                {f"{name}.{inner}": spec.get("type") for inner, spec in sub.items() if isinstance(spec, Mapping)}
            )
    return names


def check_fields(index: str, fields: FieldMap, mapping: Mapping[str, Any]) -> None:
    """Every field the map has the engine search, filter or sort on is in the mapping, and no field matched by
    whole value (tags, status, id, ...) is analyzed text.

    The engines answer a query on an unmapped field with no match, not an error: a misspelt text field
    would silently score nothing, a misspelt status leave nothing out, a misspelt tags field filter out
    everything. A ``terms`` filter on a text field matches its words, so ``tags=Solar Energy`` would find
    nothing.
    """
    known = searchable_fields(mapping)
    named = [(f"text {name!r}", name) for name in fields.text] + [(f"exact {name!r}", name) for name in fields.exact]
    named += [(f"{role} = {value!r}", value) for role in _SEARCHED_ROLES if (value := getattr(fields, role))]
    runtime = mapping.get("runtime") or {}
    computed = [label for label, name in named if name not in known and name in runtime]
    if computed:
        raise errors.ConfigError(
            f"[fields.{index}] names runtime fields: {', '.join(computed)}; {RUNTIME_UNREAD}. Name a field of the "
            "mapping's properties"
        )
    missing = [label for label, name in named if name not in known]
    if missing:
        raise errors.ConfigError(
            f"[fields.{index}] names fields that are not in the index's mapping: {', '.join(missing)} (a field "
            f"inside a nested object counts as absent); run `esbridge index inspect {index}` to see its fields"
        )
    analyzed = [
        f"{role} = {value!r}"
        + (f" (its keyword sub-field: {keyword!r})" if (keyword := _keyword_of(value, known)) else "")
        for role in _VALUE_ROLES
        if (value := getattr(fields, role)) and known.get(value) in TEXT_TYPES
    ]
    if analyzed:
        raise errors.ConfigError(
            f"[fields.{index}] names text fields for roles matched by whole value: {', '.join(analyzed)}; a text "
            "field is split into words, so a filter on it would miss values. Name a keyword field instead"
        )


def _keyword_of(name: str, known: Mapping[str, str | None]) -> str | None:
    return next(
        (
            field
            for field, kind in known.items()
            if field.startswith(f"{name}.") and kind in KEYWORD_TYPES and "." not in field[len(name) + 1 :]
        ),
        None,
    )


def check_dimension(index: str, fields: FieldMap, mapping: Mapping[str, Any], embedder_dimension: int | None) -> None:
    """Before any search: the mapped vector field exists, and the query vectors will have its dimension.

    A mismatch would otherwise surface as an engine error on every kNN request, or as a search that
    silently degrades to lexical-only.
    """
    if fields.vector is None or fields.query_embedding == "engine":
        return
    dimension = mapped_dimension(mapping, fields.vector)
    if fields.dimension is not None and dimension is not None and fields.dimension != dimension:
        raise errors.DimensionMismatch(
            f"[fields.{index}] says {fields.vector} has dimension {fields.dimension}, but the index maps it with "
            f"{dimension}; run `esbridge index inspect {index}` to see the mapping"
        )
    if embedder_dimension is not None and dimension is not None and embedder_dimension != dimension:
        raise errors.DimensionMismatch(
            f"the query embedder makes {embedder_dimension}-dimensional vectors, but {index}.{fields.vector} holds "
            f"{dimension}-dimensional ones; name the model that made them as model in [fields.{index}]"
        )


def check_space(index: str, fields: FieldMap, mapping: Mapping[str, Any]) -> FieldMap:
    """The field map with the vector field's space as the mapping gives it.

    The space decides the query vector kNN sends (an Elasticsearch ``dot_product`` field takes unit vectors
    only: ``esbridge.query.vector_spaces``), so a field map naming another space than the mapping's (written by
    hand, or before the index was made again) is refused rather than searched as if it were right.
    """
    if fields.vector is None or fields.query_embedding == "engine":
        return fields
    mapped = mapped_vector(mapping, fields.vector).space
    if mapped is None or fields.space == mapped:
        return fields
    if fields.space is None:
        return fields.model_copy(update={"space": mapped})
    raise errors.ConfigError(
        f"[fields.{index}] says {fields.vector} has space {fields.space!r}, but the index maps it with {mapped!r}; "
        f'set space = "{mapped}" there (`esbridge index inspect {index}` shows the mapping)'
    )
