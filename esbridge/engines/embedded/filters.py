"""Filters of the query DSL subset compiled to SQL over the ``docs`` and ``fieldvals`` tables.

The SQL path answers what the tantivy translation (``lexical_query``) cannot: ranges over keyword
fields, ``exists`` on text and object fields, and filters the vector search needs as row sets when tantivy
is not asked. Only generated SQL reaches the database: identifiers of the engine's own making, every
value bound as a parameter.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any

from esbridge.engines.embedded.dates import DEFAULT_FORMAT, date_span, format_parts
from esbridge.engines.embedded.mapping import Field, Schema
from esbridge.engines.embedded.store import IndexRecord, Store
from esbridge.engines.embedded.time_zones import time_zone
from esbridge.engines.embedded.values import ROUNDED, WHOLE, indexed_value, number_bound, stored_number

SQL = tuple[str, list[Any]]
_MINIMUM = re.compile(r"(-?\d+)(%?)")
_FILTERS = frozenset({"match_all", "match_none", "term", "terms", "range", "ids", "exists"})


class Unsupported(ValueError):
    """A request outside the embedded engine's subset, or malformed."""


def one(clause: Any, what: str = "query") -> tuple[str, Any]:
    if not isinstance(clause, Mapping) or len(clause) != 1:
        raise Unsupported(f"a {what} must be an object with exactly one key, got {clause!r}"[:300])
    return next(iter(clause.items()))


def clauses(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def check_keys(spec: Mapping[str, Any], allowed: Iterable[str], what: str) -> None:
    if not isinstance(spec, Mapping):
        raise Unsupported(f"{what} needs an object, got {spec!r}"[:300])
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise Unsupported(f"{what}: unsupported parameter(s) {unknown} in the embedded engine")


def number(value: Any, what: str) -> float:
    """A number of the request (a boost, a tie breaker), given as a number or a numeric string."""
    try:
        if isinstance(value, (bool, Mapping, list)) or value is None:
            raise TypeError(value)
        return float(value)
    except (TypeError, ValueError) as exc:
        raise Unsupported(f"{what} must be a number, got {value!r}"[:300]) from exc


def boost_of(spec: Any) -> float:
    return number(spec.get("boost", 1.0), "boost") if isinstance(spec, Mapping) else 1.0


def json_path(path: Sequence[str]) -> str:
    return "$" + "".join('."' + part.replace('"', '\\"') + '"' for part in path)


def minimum_should_match(spec: Mapping[str, Any], *, optional: int, required: bool) -> int:
    """How many of a ``bool``'s ``optional`` should clauses a document must match, as Lucene reads
    ``minimum_should_match``: a count or a percentage of them, a negative one counting what may be missed; 0 by
    default beside ``must`` or ``filter`` clauses (``required``), and at least 1 without them."""
    value = spec.get("minimum_should_match", 0)
    found = None if isinstance(value, bool) else _MINIMUM.fullmatch(str(value).strip())
    if found is None:
        raise Unsupported(
            f"minimum_should_match {value!r}: only a count or a percentage is supported by the embedded engine"
        )
    number = int(found[1])
    if found[2]:
        share = math.trunc(optional * number / 100)
        count = optional + share if number < 0 else share
    else:
        count = optional + number if number < 0 else number
    return max(count, 0 if required else 1)


def coerce(field: Field, value: Any, *, bound: bool = False) -> Any:
    """``value`` as the index stores it for ``field`` (see ``values.indexed_value``), or as a range's ``bound`` is
    compared with it (``values.number_bound``); Unsupported when it cannot be. A whole-number field compares a
    query's value as it is."""
    if isinstance(value, (Mapping, list)):
        raise Unsupported(f"value {value!r} for field [{field.path}] must be a scalar")
    if field.type == "date" and isinstance(value, str) and ("now" in value or "||" in value):
        raise Unsupported(f"date math {value!r} is not supported by the embedded engine")
    try:
        indexed = indexed_value(field, value)
    except (TypeError, ValueError) as exc:
        raise Unsupported(f"{value!r} is not a valid {field.type} for field [{field.path}]") from exc
    if field.type not in ROUNDED or field.type in WHOLE:
        return indexed
    stored = stored_number(field, indexed)
    if field.type in ("float", "half_float") and not math.isfinite(stored):
        # as OpenSearch refuses it (Elasticsearch finds nothing), naming it at single precision as Java prints it
        single = number_bound(field, indexed)
        shown = {math.inf: "Infinity", -math.inf: "-Infinity"}.get(single, "NaN" if single != single else repr(single))
        raise Unsupported(f"[{field.type}] supports only finite values, but got [{shown}]")
    return number_bound(field, indexed) if bound else stored


def date_span_of(field: Field, value: Any, form: Any = None, zone: tzinfo | None = None) -> tuple[int, int]:
    """The first and last millisecond a date bound stands for (``dates.date_span``); Unsupported when it is none.
    ``form`` is a range's ``format``, else the field's own is read: its parts are tried in order on the bound's
    text, as a cluster tries them whether the bound is a JSON number or a string (``strict_date_optional_time``
    reads four digits as a year and refuses other numbers, ``epoch_millis`` reads numbers as milliseconds).
    ``zone`` is a range's ``time_zone``."""
    if isinstance(value, str) and ("now" in value or "||" in value):
        raise Unsupported(f"date math {value!r} is not supported by the embedded engine")
    if isinstance(value, (Mapping, list)):
        raise Unsupported(f"value {value!r} for field [{field.path}] must be a scalar")
    if form is None and field.date_format != DEFAULT_FORMAT:
        form = field.date_format
    if form is not None:
        try:
            format_parts(form)
        except ValueError as exc:
            raise Unsupported(f"range on [{field.path}]: {exc}") from None
    try:
        return date_span(value, form, zone)
    except (TypeError, ValueError, OverflowError) as exc:
        raise Unsupported(f"{value!r} is not a valid date for field [{field.path}]: {exc}") from exc


Limits = tuple[Any, bool, Any, bool]
"""(lower, inclusive, upper, inclusive) of a range; None where it is open."""


def range_limits(field: Field, bounds: Mapping[str, Any]) -> Limits:
    """The limits of a range on ``field`` over the values the index stores. On dates, as OpenSearch rounds its
    bounds: ``gte`` and ``lt`` at the first millisecond of what they name, ``gt`` and ``lte`` at the last, and
    a stored date counts by its millisecond; a date without an offset is read in the range's ``time_zone`` (UTC
    without one), which other fields ignore."""
    lower: Any = None
    upper: Any = None
    include_lower = include_upper = True
    form = bounds.get("format")
    if form is not None and field.type != "date":
        raise Unsupported(f"range on [{field.path}]: format applies to date fields only")
    zone = range_zone(field.path, bounds)
    for key in ("gte", "gt"):
        if bounds.get(key) is not None:
            if field.type == "date":
                first, last = date_span_of(field, bounds[key], form, zone)
                lower, include_lower = (first if key == "gte" else last + 1), True
            else:
                lower, include_lower = coerce(field, bounds[key], bound=True), key == "gte"
    for key in ("lte", "lt"):
        if bounds.get(key) is not None:
            if field.type == "date":
                first, last = date_span_of(field, bounds[key], form, zone)
                upper, include_upper = (last + 1 if key == "lte" else first), False
            else:
                upper, include_upper = coerce(field, bounds[key], bound=True), key == "lte"
    return lower, include_lower, upper, include_upper


def term_as_terms(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A ``term`` query's body as the ``terms`` body that means the same."""
    name, value = one(spec, "term")
    if isinstance(value, Mapping):
        check_keys(value, ("value", "boost"), "term")
        value = value.get("value")
    return {name: [value]}


def range_bounds(spec: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """(field name, bounds) of a ``range`` query's body."""
    name, bounds = one(spec, "range")
    if not isinstance(bounds, Mapping):
        raise Unsupported(f"range on [{name}] needs an object of bounds")
    check_keys(bounds, ("gte", "gt", "lte", "lt", "format", "time_zone", "boost"), f"range on [{name}]")
    range_zone(name, bounds)  # (a cluster refuses a zone it does not know on any field, mapped or not)
    return name, bounds


def range_zone(name: str, bounds: Mapping[str, Any]) -> tzinfo | None:
    """The zone of a range's ``time_zone``; Unsupported, naming it as a cluster does, when it names none."""
    if "time_zone" not in bounds:
        return None
    try:
        return time_zone(bounds["time_zone"])
    except ValueError as exc:
        raise Unsupported(f"range on [{name}]: {exc}") from None


def terms_field(spec: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """(field name, values) of a ``terms`` query's body."""
    names = [key for key in spec if key != "boost"]
    if len(names) != 1 or not isinstance(spec[names[0]], list):
        raise Unsupported(f"terms takes one field and a list of values, got {spec!r}"[:300])
    return names[0], spec[names[0]]


def check_terms_count(values: Sequence[Any], schema: Schema) -> None:
    """Refuse a ``terms`` query on a mapped field with more values than the index's ``index.max_terms_count``, as a
    cluster refuses it, in its words."""
    if len(values) > schema.max_terms:
        raise Unsupported(
            f"The number of terms [{len(values)}] used in the Terms Query request has exceeded the allowed maximum"
            f" of [{schema.max_terms}]. This maximum can be set by changing the [index.max_terms_count] index level"
            " setting."
        )


def _infinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


class SqlFilters:
    """Filter clauses of one index as SQL conditions over ``docs d``."""

    def __init__(self, store: Store, db: sqlite3.Connection, record: IndexRecord) -> None:
        self.store = store
        self.db = db
        self.record = record
        self.schema: Schema = record.schema

    def sql(self, clause: Any) -> SQL | None:
        """``clause`` as a SQL condition, or None when it scores text or vectors."""
        kind, spec = one(clause)
        if kind == "bool":
            return self._bool_sql(spec)
        if kind not in _FILTERS:
            if kind in ("match", "multi_match", "knn"):
                return None
            raise Unsupported(f"query type [{kind}] is not supported by the embedded engine")
        return getattr(self, f"_{kind}_sql")(spec)  # type: ignore[no-any-return]

    def _bool_sql(self, spec: Mapping[str, Any]) -> SQL | None:
        check_keys(spec, ("must", "filter", "should", "must_not", "minimum_should_match", "boost"), "bool")
        parts: dict[str, list[SQL]] = {}
        for key in ("must", "filter", "should", "must_not"):
            compiled = [self.sql(c) for c in clauses(spec.get(key, []))]
            if any(c is None for c in compiled):
                return None
            parts[key] = [c for c in compiled if c is not None]
        conditions: list[str] = []
        params: list[Any] = []
        for text, values in parts["must"] + parts["filter"]:
            conditions.append(f"({text})")
            params += values
        for text, values in parts["must_not"]:
            conditions.append(f"NOT ({text})")
            params += values
        should = parts["should"]
        if should:
            minimum = minimum_should_match(spec, optional=len(should), required=bool(parts["must"] or parts["filter"]))
            if minimum > 0:
                conditions.append(
                    "(" + " + ".join(f"(CASE WHEN {text} THEN 1 ELSE 0 END)" for text, _ in should) + f") >= {minimum}"
                )
                for _, values in should:
                    params += values
        return (" AND ".join(conditions) or "1", params)

    def _match_all_sql(self, spec: Mapping[str, Any]) -> SQL:
        check_keys(spec, ("boost",), "match_all")
        return ("1", [])

    def _match_none_sql(self, spec: Mapping[str, Any]) -> SQL:
        return ("0", [])

    def _ids_sql(self, spec: Mapping[str, Any]) -> SQL:
        check_keys(spec, ("values", "boost"), "ids")
        values = [str(v) for v in spec.get("values", [])]
        if not values:
            return ("0", [])
        return ("d.id IN (SELECT value FROM json_each(?))", [json.dumps(values)])

    def _field(self, name: str, what: str) -> Field | None:
        """The mapped field ``name``; None when unmapped (which matches nothing, as in OpenSearch)."""
        if name == "_id":
            return Field("_id", "keyword", ())
        field = self.schema.fields.get(name)
        if field is not None and field.type in ("text", "knn_vector", "object"):
            raise Unsupported(f"{what} on {field.type} field [{name}] is not supported by the embedded engine")
        return field

    def _values_sql(self, field: Field, condition: str, params: list[Any]) -> SQL:
        """``condition`` on ``value`` (each indexed value of ``field``, arrays flattened) holds for some value."""
        if field.path == "_id":
            return (condition.format(value="d.id"), params)
        subquery = f"SELECT row FROM fieldvals WHERE field = ? AND {condition.format(value='fieldvals.value')}"  # noqa: S608
        return (f"d.row IN ({subquery})", [field.path, *params])

    def _term_sql(self, spec: Mapping[str, Any]) -> SQL:
        return self._terms_sql(term_as_terms(spec))

    def _terms_sql(self, spec: Mapping[str, Any]) -> SQL:
        name, values = terms_field(spec)
        field = self._field(name, "terms")
        if field is None or not values:
            return ("0", [])
        check_terms_count(values, self.schema)
        # The values travel as one JSON parameter: one parameter or OR term each would meet SQLite's limits on
        # parameters (32,766 in many builds) and on expression depth (1,000) long before index.max_terms_count.
        if field.type == "date":  # each value stands for its span, as a range of one value
            spans = sorted({(first, last + 1) for first, last in (date_span_of(field, value) for value in values)})
            condition = (
                "EXISTS (SELECT 1 FROM json_each(?) span WHERE {value} >= json_extract(span.value, '$[0]')"
                " AND {value} < json_extract(span.value, '$[1]'))"
            )
            return self._values_sql(field, condition, [json.dumps(spans)])
        # (NaN and infinities, which JSON cannot hold, equal no stored value)
        coerced = [v for v in (coerce(field, value) for value in values) if not _infinite(v)]
        return self._values_sql(field, "{value} IN (SELECT value FROM json_each(?))", [json.dumps(coerced)])

    def _range_sql(self, spec: Mapping[str, Any]) -> SQL:
        name, bounds = range_bounds(spec)
        field = self._field(name, "range")
        if field is None:
            return ("0", [])
        lower, include_lower, upper, include_upper = range_limits(field, bounds)
        conditions, params = [], []
        if lower is not None:
            conditions.append(f"{{value}} {'>=' if include_lower else '>'} ?")
            params.append(lower)
        if upper is not None:
            conditions.append(f"{{value}} {'<=' if include_upper else '<'} ?")
            params.append(upper)
        return self._values_sql(field, " AND ".join(conditions) or "1", params)

    def _exists_sql(self, spec: Mapping[str, Any]) -> SQL:
        check_keys(spec, ("field", "boost"), "exists")
        name = str(spec.get("field", ""))
        field = self.schema.fields.get(name)
        if field is None:
            return ("0", [])
        if field.type == "knn_vector":
            return (
                "EXISTS (SELECT 1 FROM vectors x WHERE x.row = d.row AND x.field = ? AND length(x.data) > 0)",
                [field.path],
            )
        if field.type == "object":  # as in OpenSearch: some field inside it has a value (none when not indexed)
            inner = [
                self._exists_sql({"field": path})
                for path, found in self.schema.fields.items()
                if path.startswith(name + ".") and found.type != "object"
            ]
            if not inner:
                return ("0", [])
            return (" OR ".join(f"({text})" for text, _ in inner), [value for _, values in inner for value in values])
        if field.type != "text":
            return ("d.row IN (SELECT row FROM fieldvals WHERE field = ?)", [field.path])
        return (
            "EXISTS (SELECT 1 FROM json_each(d.source, ?) WHERE value IS NOT NULL)",
            [json_path(field.source_path)],
        )

    def restriction(self, condition: SQL) -> tuple[set[int] | None, set[int]]:
        """(rows that pass, None) or (None, rows that fail), whichever set is smaller.

        Filters such as the lifecycle exclusion pass nearly every row; reading the few that fail is
        much cheaper than turning every row id into a Python int.
        """
        text, params = condition
        count = f"SELECT count(*) FROM docs d WHERE d.index_id = ? AND ({text})"  # noqa: S608
        passing = int(self.db.execute(count, (self.record.id, *params)).fetchone()[0])
        if passing * 2 <= self.store.count(self.record.id):
            return self.rows_where(condition), set()
        return None, self.rows_where((f"NOT ({text})", params))

    def rows_where(self, condition: SQL) -> set[int]:
        text, params = condition
        # Only generated SQL reaches here: identifiers of the engine's own making, every value bound as a parameter.
        query = f"SELECT d.row FROM docs d WHERE d.index_id = ? AND ({text})"  # noqa: S608
        return {row for (row,) in self.db.execute(query, (self.record.id, *params))}

    # Scoring
