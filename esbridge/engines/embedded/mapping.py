"""An index mapping as the embedded engine reads it: typed fields, their columns, document checks."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from esbridge.engines.embedded.analysis import ANALYSIS_VERSION, FieldAnalysis, UnsupportedAnalysis, field_analysis
from esbridge.engines.embedded.dates import DEFAULT_FORMAT, field_format, parse_date
from esbridge.engines.embedded.field_checks import MappingError as MappingError
from esbridge.engines.embedded.field_checks import check_fields, scaling_factor
from esbridge.engines.embedded.root_mapping import check_root
from esbridge.engines.embedded.scalars import check_number, immense_term, unpaired_surrogate
from esbridge.engines.embedded.settings import MAX_TERMS_COUNT, check_created, length_weight, max_terms_count
from esbridge.engines.embedded.shapes import MAX_DEPTH, flat_items, nesting_depth

NUMERIC = frozenset({"integer", "long", "short", "byte", "float", "double", "half_float", "scaled_float"})
SUPPORTED_TYPES = frozenset({"text", "keyword", "boolean", "date", "object", "knn_vector", *NUMERIC})
SPACE_TYPES = frozenset({"cosinesimil"})


_ANY_STRING = frozenset({"text", "keyword"})
_BOOLEANS = frozenset({"true", "false", ""})
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class DocumentError(ValueError):
    """A document its index's mapping refuses; ``kind`` is the OpenSearch error type."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind


@dataclass(frozen=True)
class Field:
    path: str
    """The name queries use: ``title``, ``title.std`` (a sub-field), ``meta.author`` (an object property)."""
    type: str
    source_path: tuple[str, ...]
    """Where the value sits in ``_source`` (a sub-field reads its parent's value)."""
    analysis: FieldAnalysis | None = None
    dimension: int = 0
    enabled: bool = True
    """An object's ``enabled``: false keeps its value in ``_source`` only, whatever it is."""
    ignore_above: int | None = None
    """A keyword's ``ignore_above``: a longer value is kept in ``_source`` only."""
    date_format: str = DEFAULT_FORMAT
    """A date's ``format`` (``dates.FORMATS``): how its values and the bounds of ranges on it are read."""
    scaling_factor: float | None = None
    """A ``scaled_float``'s ``scaling_factor`` (None in an index created before it was required)."""

    def indexes(self, text: str) -> bool:
        """Whether a keyword value is indexed (not longer than ``ignore_above``)."""
        return self.ignore_above is None or len(text) <= self.ignore_above


VERSION_SETTING = "analysis_version"
"""The index setting recording the analysis version an index was created with (``analysis.ANALYSIS_VERSION``)."""


def schema_of(mappings: Mapping[str, Any], index_settings: Mapping[str, Any]) -> Schema:
    """The schema of an index with these mappings and ``settings.index``: its analysis definitions and the
    analysis version it was created with (1, the first, when it records none)."""
    version = index_settings.get(VERSION_SETTING, 1)
    if isinstance(version, str) and version.isdigit():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise MappingError(f"index.{VERSION_SETTING} must be a number, got {version!r}")
    try:
        bm25_b, terms = length_weight(index_settings), max_terms_count(index_settings, strict=False)
    except ValueError as exc:
        raise MappingError(str(exc)) from None
    return Schema(mappings, index_settings.get("analysis", {}), version, bm25_b=bm25_b, max_terms=terms)


def created_schema(mappings: Mapping[str, Any], index_settings: dict[str, Any]) -> Schema:
    """The schema of an index created now: its settings record the analysis version it is created with."""
    index_settings.setdefault(VERSION_SETTING, ANALYSIS_VERSION)
    try:
        check_created(index_settings)
    except ValueError as exc:
        raise MappingError(str(exc)) from None
    check_root(mappings)
    check_fields(mappings.get("properties", {}), index_settings.get("analysis", {}))
    return schema_of(mappings, index_settings)


def updated_schema(mappings: Mapping[str, Any], index_settings: Mapping[str, Any], added: Mapping[str, Any]) -> Schema:
    """The schema of an index whose mapping ``added`` these properties to (checked as at creation)."""
    check_fields(added, index_settings.get("analysis", {}))
    return schema_of(mappings, index_settings)


class Schema:
    """The fields of one index's mapping, with the analysis settings its text fields use."""

    def __init__(
        self,
        mappings: Mapping[str, Any],
        analysis: Mapping[str, Any],
        version: int = ANALYSIS_VERSION,
        *,
        bm25_b: float = 0.75,
        max_terms: int = MAX_TERMS_COUNT,
    ) -> None:
        self.mappings = mappings
        self.bm25_b = bm25_b
        """BM25's length normalisation, which the full-text index honours up to 0.75 (``lengths``)."""
        self.max_terms = max_terms
        """``index.max_terms_count``: the most values a ``terms`` query on a mapped field may hold."""
        self.dynamic = str(mappings.get("dynamic", "true")).lower()
        self.fields: dict[str, Field] = {}
        self.version = version
        try:
            for field in self._walk(mappings.get("properties", {}), (), analysis):
                self.fields[field.path] = field
        except UnsupportedAnalysis as exc:
            raise MappingError(f"unsupported analysis: {exc}") from exc
        self._by_source: dict[tuple[str, ...], list[Field]] = {}
        for field in self.fields.values():
            self._by_source.setdefault(field.source_path, []).append(field)
        # Per place in _source, the value types every field reading it takes without a closer look.
        self._passing: dict[tuple[str, ...], frozenset[type]] = {
            place: frozenset.intersection(*(_passing(field.type) for field in fields))
            for place, fields in self._by_source.items()
        }

    def _walk(
        self, properties: Mapping[str, Any], parent: tuple[str, ...], analysis: Mapping[str, Any]
    ) -> Iterator[Field]:
        if not isinstance(properties, Mapping):
            raise MappingError("properties must be an object")
        for name, spec in properties.items():
            path = (*parent, name)
            kind = str(spec.get("type", "object" if "properties" in spec else ""))
            if kind not in SUPPORTED_TYPES:
                raise MappingError(f"field {'.'.join(path)!r} has unsupported type {kind!r}")
            if kind == "object":
                enabled = str(spec.get("enabled", True)).lower() != "false"
                yield Field(".".join(path), kind, path, enabled=enabled)
                if enabled:
                    yield from self._walk(spec.get("properties", {}), path, analysis)
                continue
            yield self._leaf(".".join(path), kind, spec, path, analysis, self.version)
            for sub, sub_spec in (spec.get("fields") or {}).items():
                sub_kind = str(sub_spec.get("type", ""))
                if sub_kind not in SUPPORTED_TYPES - {"object", "knn_vector"}:
                    raise MappingError(f"sub-field {'.'.join(path)}.{sub} has unsupported type {sub_kind!r}")
                yield self._leaf(f"{'.'.join(path)}.{sub}", sub_kind, sub_spec, path, analysis, self.version)

    @staticmethod
    def _leaf(
        name: str,
        kind: str,
        spec: Mapping[str, Any],
        source: tuple[str, ...],
        analysis: Mapping[str, Any],
        version: int,
    ) -> Field:
        if kind == "text":
            return Field(name, kind, source, analysis=field_analysis(spec.get("analyzer"), analysis, version))
        if kind == "knn_vector":
            dimension = int(spec.get("dimension", 0))
            if not 1 <= dimension <= 16000:
                raise MappingError(f"knn_vector {name!r} needs a dimension in 1..16000")
            space = (spec.get("method") or {}).get("space_type", spec.get("space_type", "l2"))
            if space not in SPACE_TYPES:
                raise MappingError(f"knn_vector {name!r}: space_type {space!r} (the embedded engine has cosinesimil)")
            return Field(name, kind, source, dimension=dimension)
        if kind == "date":
            return Field(name, kind, source, date_format=field_format(spec.get("format")))
        if kind == "scaled_float":
            return Field(name, kind, source, scaling_factor=scaling_factor(spec))
        limit = spec.get("ignore_above") if kind == "keyword" else None
        return Field(name, kind, source, ignore_above=None if limit is None else int(limit))

    @property
    def text_fields(self) -> list[Field]:
        return sorted((f for f in self.fields.values() if f.type == "text"), key=lambda f: f.path)

    @functools.cached_property
    def vector_fields(self) -> list[Field]:
        return [f for f in self.fields.values() if f.type == "knn_vector"]

    @functools.cached_property
    def filterable_fields(self) -> list[Field]:
        """The fields whose values filters and sorts read (keywords, numbers, dates, booleans)."""
        return [f for f in self.fields.values() if f.type not in ("text", "object", "knn_vector")]

    @functools.cached_property
    def filterable_by_key(self) -> dict[str, list[Field]]:
        """``filterable_fields`` by the first key of their place in ``_source``: a document is read by its own
        keys, which are fewer than the mapping's fields."""
        found: dict[str, list[Field]] = {}
        for field in self.filterable_fields:
            found.setdefault(field.source_path[0], []).append(field)
        return found

    def value(self, source: Mapping[str, Any], field: Field) -> Any:
        current: Any = source
        for part in field.source_path:
            if not isinstance(current, Mapping) or part not in current:
                return None
            current = current[part]
        return current

    @functools.cached_property
    def _vector_keys(self) -> frozenset[str]:
        return frozenset(f.source_path[0] for f in self.vector_fields if len(f.source_path) == 1)

    def check(self, document: Mapping[str, Any]) -> None:
        """Raise DocumentError when ``document`` does not fit the mapping (as OpenSearch would refuse it)."""
        deep = nesting_depth(document, self._vector_keys)
        if deep is not None:
            raise DocumentError(
                "mapper_parsing_exception",
                f"failed to parse: document nesting depth ({deep[0]}) in field [{deep[1]}] exceeds the maximum "
                f"allowed ({MAX_DEPTH})",
            )
        self._check_object(document, ())

    def _check_object(self, document: Mapping[str, Any], parent: tuple[str, ...]) -> None:
        for key, value in document.items():
            path = ".".join((*parent, key))
            field = self.fields.get(path)
            if field is None:
                if self.dynamic == "strict":
                    where = ".".join(parent) or "_doc"
                    raise DocumentError(
                        "strict_dynamic_mapping_exception",
                        f"mapping set to strict, dynamic introduction of [{key}] within [{where}] is not allowed",
                    )
                continue
            if "." in key:  # (a cluster reads it as the object path; here values are read from inside objects only)
                raise DocumentError(
                    "mapper_parsing_exception",
                    f"field [{path}] written as the dotted name [{key}]: the embedded engine indexes it only when "
                    "written inside its object",
                )
            if value is None:
                continue
            if field.type == "object":
                self._check_inner(field, value, (*parent, key))
                continue
            passing = self._passing[field.source_path]
            plain = type(value)
            if plain in passing or (plain is list and value and all(type(item) in passing for item in value)):
                _check_text(self._by_source[field.source_path], value)  # (strings, the only values passing so)
                continue
            for checked in self._by_source[field.source_path]:
                self._check_value(checked, value)

    def _check_inner(self, field: Field, value: Any, path: tuple[str, ...]) -> None:
        """An object's value: anything where it is not indexed (``enabled: false``), else an object or an array
        of them (each read as if it stood alone), as OpenSearch takes them."""
        if not field.enabled:
            return
        inner = [name for name in self.fields if name.startswith(field.path + ".")]
        items = value if type(value) is list else [value]
        if len(items) > 1 and any(self.fields[name].type == "knn_vector" for name in inner):
            raise DocumentError("mapper_parsing_exception", f"an array of [{field.path}] objects holds vectors")
        for item in items:
            if item is None:
                continue
            if not isinstance(item, Mapping):
                raise DocumentError(
                    "mapper_parsing_exception", f"object mapping for [{field.path}] got a non-object value"
                )
            if inner:
                self._check_object(item, path)

    @staticmethod
    def _check_value(field: Field, value: Any) -> None:
        kind = field.type
        if kind == "knn_vector":
            _check_vector(field, value)
            return
        for item in flat_items(value):
            plain = type(item)  # strings for text and keywords, booleans for booleans: no closer look
            if item is None or (plain is bool and kind == "boolean"):
                continue
            if plain is str and kind in _ANY_STRING:
                _check_text((field,), item)
                continue
            try:
                if kind == "date":
                    parse_date(item, field.date_format)
                elif kind in NUMERIC:
                    check_number(kind, item)
                elif isinstance(item, (Mapping, list)) or (
                    kind == "boolean" and not (plain is str and item in _BOOLEANS)
                ):
                    raise ValueError(item)
            except (TypeError, ValueError, OverflowError) as exc:
                reason = f"failed to parse field [{field.path}] of type [{field.type}]: {item!r}"
                if kind == "date":
                    reason += f" is no date in format [{field.date_format}]"
                raise DocumentError("mapper_parsing_exception", reason) from exc


def _check_text(fields: Sequence[Field], value: str | list[str]) -> None:
    """Refuse a string that is not UTF-8 text (it holds an unpaired surrogate), which tantivy and SQLite cannot take,
    and one a keyword field among ``fields`` (those reading it) would index as an immense term, as a cluster does."""
    texts = value if isinstance(value, list) else [value]
    for text in texts:
        if not text.isascii() and (problem := unpaired_surrogate(text)) is not None:
            field = fields[0]
            raise DocumentError(
                "mapper_parsing_exception", f"failed to parse field [{field.path}] of type [{field.type}]: {problem}"
            )
        if (problem := immense_term(text)) is not None:
            for field in fields:
                if field.type == "keyword" and field.indexes(text):
                    raise DocumentError(
                        "illegal_argument_exception",
                        f'Document contains at least one immense term in field="{field.path}" (whose UTF8 encoding is '
                        f"longer than the max length 32766): {problem}",
                    )


def _passing(kind: str) -> frozenset[type]:
    """The value types ``Schema._check_value`` lets through for a field of ``kind`` before any conversion."""
    if kind in _ANY_STRING:
        return frozenset({str})
    return frozenset()


def _check_vector(field: Field, value: Any) -> None:
    numbers = None  # (not an empty array: that would pass the checks below as no numbers at all)
    # The element types in one pass in C: a generator over a 384-number vector cost more than the conversion.
    if isinstance(value, list) and bool not in set(map(type, value)):
        with contextlib.suppress(TypeError, ValueError):
            numbers = np.asarray(value, dtype=np.float64)
    if numbers is None or numbers.ndim != 1 or not (np.abs(numbers) <= _FLOAT32_MAX).all():  # (NaN too)
        raise DocumentError("mapper_parsing_exception", f"field [{field.path}] must be an array of numbers")
    if len(value) != field.dimension:
        raise DocumentError(
            "mapper_parsing_exception",
            f"Vector dimension mismatch. Expected: {field.dimension}, Given: {len(value)}",
        )
    if not numbers.any():
        raise DocumentError("mapper_parsing_exception", f"zero vector in [{field.path}] has no cosine")
