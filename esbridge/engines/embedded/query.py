"""The subset of the OpenSearch query DSL that esbridge sends, run over SQLite, FTS5 and numpy.

Supported: ``bool`` (must, filter, should, must_not, minimum_should_match as a count, boost),
``match_all``, ``match_none``, ``term``, ``terms``, ``range`` (numbers, dates, keywords; no date math),
``ids``, ``exists``, ``match`` and ``multi_match`` (``best_fields``, ``most_fields``, ``cross_fields``;
``operator``, ``tie_breaker``, ``field^boost``), and ``knn`` (``vector``, ``k``, ``filter``,
``method_parameters`` accepted and ignored: the search is exact). Search bodies may carry ``size``,
``from``, ``_source``, ``sort`` (keyword, number and date fields, ``_id``, ``_score``), ``search_after``,
``track_total_hits`` and ``timeout`` (accepted, not enforced: a search runs to completion).
Anything else is refused with ``Unsupported``, naming the construct.

Scoring differs from Lucene's in known ways (FTS5's ``bm25()`` with k1=1.2, b=0.75):

- IDF is ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, so a term in more than half the documents
  scores ~0 (Lucene adds 1 inside the log and never reaches 0);
- document length is the row's length over all text columns of the FTS5 table, not per field;
- a ``field^boost`` weights term frequencies inside one BM25 sum (BM25F-like) for ``cross_fields``;
  for ``best_fields``/``most_fields`` it multiplies each field's score, as in Lucene.
"""

from __future__ import annotations

import fnmatch
import functools
import heapq
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from esbridge.engines.embedded.analysis import fts_terms
from esbridge.engines.embedded.mapping import NUMERIC, Field, Schema, parse_date
from esbridge.engines.embedded.store import IndexRecord, Store, fts_layout, fts_table
from esbridge.engines.embedded.vectors import VectorCache

Rows = dict[int, float]
SQL = tuple[str, list[Any]]

BODY_KEYS = frozenset({"query", "size", "from", "_source", "sort", "search_after", "track_total_hits", "timeout"})
MAX_RESULT_WINDOW = 10_000
_FILTERS = frozenset({"match_all", "match_none", "term", "terms", "range", "ids", "exists"})


class Unsupported(ValueError):
    """A request outside the embedded engine's subset, or malformed."""


def _one(clause: Any, what: str = "query") -> tuple[str, Any]:
    if not isinstance(clause, Mapping) or len(clause) != 1:
        raise Unsupported(f"a {what} must be an object with exactly one key, got {clause!r}"[:300])
    return next(iter(clause.items()))


def _clauses(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _check_keys(spec: Mapping[str, Any], allowed: Iterable[str], what: str) -> None:
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise Unsupported(f"{what}: unsupported parameter(s) {unknown} in the embedded engine")


def _json_path(path: Sequence[str]) -> str:
    return "$" + "".join('."' + part.replace('"', '\\"') + '"' for part in path)


class Searcher:
    """One search against one index."""

    def __init__(self, store: Store, record: IndexRecord, vectors: VectorCache) -> None:
        self.store = store
        self.db: sqlite3.Connection = store.db
        self.record = record
        self.schema: Schema = record.schema
        self.vectors = vectors
        self.layout = fts_layout(self.schema)

    # Filters compiled to SQL over ``docs d``

    def sql(self, clause: Any) -> SQL | None:
        """``clause`` as a SQL condition, or None when it scores text or vectors."""
        kind, spec = _one(clause)
        if kind == "bool":
            return self._bool_sql(spec)
        if kind not in _FILTERS:
            if kind in ("match", "multi_match", "knn"):
                return None
            raise Unsupported(f"query type [{kind}] is not supported by the embedded engine")
        return getattr(self, f"_{kind}_sql")(spec)  # type: ignore[no-any-return]

    def _bool_sql(self, spec: Mapping[str, Any]) -> SQL | None:
        _check_keys(spec, ("must", "filter", "should", "must_not", "minimum_should_match", "boost"), "bool")
        parts: dict[str, list[SQL]] = {}
        for key in ("must", "filter", "should", "must_not"):
            compiled = [self.sql(c) for c in _clauses(spec.get(key, []))]
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
            minimum = self._minimum_should_match(spec, default=0 if parts["must"] or parts["filter"] else 1)
            if minimum > 0:
                conditions.append(
                    "(" + " + ".join(f"(CASE WHEN {text} THEN 1 ELSE 0 END)" for text, _ in should) + f") >= {minimum}"
                )
                for _, values in should:
                    params += values
        return (" AND ".join(conditions) or "1", params)

    @staticmethod
    def _minimum_should_match(spec: Mapping[str, Any], *, default: int) -> int:
        value = spec.get("minimum_should_match", default)
        if (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and value.isdigit()):
            return int(value)
        raise Unsupported(f"minimum_should_match {value!r}: only a count is supported by the embedded engine")

    def _match_all_sql(self, spec: Mapping[str, Any]) -> SQL:
        _check_keys(spec, ("boost",), "match_all")
        return ("1", [])

    def _match_none_sql(self, spec: Mapping[str, Any]) -> SQL:
        return ("0", [])

    def _ids_sql(self, spec: Mapping[str, Any]) -> SQL:
        _check_keys(spec, ("values", "boost"), "ids")
        values = [str(v) for v in spec.get("values", [])]
        if not values:
            return ("0", [])
        return (f"d.id IN ({', '.join('?' * len(values))})", values)

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
        subquery = f"SELECT row FROM fieldvals WHERE field = ? AND {condition.format(value='value')}"  # noqa: S608
        return (f"d.row IN ({subquery})", [field.path, *params])

    def _coerce(self, field: Field, value: Any) -> Any:
        if isinstance(value, (Mapping, list)):
            raise Unsupported(f"value {value!r} for field [{field.path}] must be a scalar")
        if field.type == "date" and isinstance(value, str) and ("now" in value or "||" in value):
            raise Unsupported(f"date math {value!r} is not supported by the embedded engine")
        try:
            if field.type == "date":
                return parse_date(value)
            if field.type == "boolean":
                return 1 if value in (True, "true") else 0
            if field.type in NUMERIC:
                return float(value)
        except (TypeError, ValueError) as exc:
            raise Unsupported(f"{value!r} is not a valid {field.type} for field [{field.path}]") from exc
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def _term_sql(self, spec: Mapping[str, Any]) -> SQL:
        name, value = _one(spec, "term")
        if isinstance(value, Mapping):
            _check_keys(value, ("value", "boost"), "term")
            value = value.get("value")
        return self._terms_sql({name: [value]})

    def _terms_sql(self, spec: Mapping[str, Any]) -> SQL:
        names = [key for key in spec if key != "boost"]
        if len(names) != 1 or not isinstance(spec[names[0]], list):
            raise Unsupported(f"terms takes one field and a list of values, got {spec!r}"[:300])
        field = self._field(names[0], "terms")
        values = spec[names[0]]
        if field is None or not values:
            return ("0", [])
        coerced = [self._coerce(field, value) for value in values]
        condition = f"{{value}} IN ({', '.join('?' * len(coerced))})"
        return self._values_sql(field, condition, coerced)

    def _range_sql(self, spec: Mapping[str, Any]) -> SQL:
        name, bounds = _one(spec, "range")
        if not isinstance(bounds, Mapping):
            raise Unsupported(f"range on [{name}] needs an object of bounds")
        _check_keys(bounds, ("gte", "gt", "lte", "lt", "boost"), f"range on [{name}]")
        field = self._field(name, "range")
        if field is None:
            return ("0", [])
        conditions, params = [], []
        for key, operator in (("gte", ">="), ("gt", ">"), ("lte", "<="), ("lt", "<")):
            if bounds.get(key) is not None:
                conditions.append(f"{{value}} {operator} ?")
                params.append(self._coerce(field, bounds[key]))
        return self._values_sql(field, " AND ".join(conditions) or "1", params)

    def _exists_sql(self, spec: Mapping[str, Any]) -> SQL:
        _check_keys(spec, ("field", "boost"), "exists")
        name = str(spec.get("field", ""))
        field = self.schema.fields.get(name)
        if field is None:
            return ("0", [])
        if field.type == "knn_vector":
            return ("EXISTS (SELECT 1 FROM vectors x WHERE x.row = d.row AND x.field = ?)", [field.path])
        if field.type not in ("text", "object"):
            return ("d.row IN (SELECT row FROM fieldvals WHERE field = ?)", [field.path])
        return (
            "EXISTS (SELECT 1 FROM json_each(d.source, ?) WHERE value IS NOT NULL)",
            [_json_path(field.source_path)],
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

    def cached_restriction(self, condition: SQL) -> tuple[set[int] | None, set[int]]:
        key = (self.record.id, self.record.generation, condition[0], *condition[1])
        return self.vectors.restriction(key, lambda: self.restriction(condition))

    def rows_where(self, condition: SQL) -> set[int]:
        text, params = condition
        # Only generated SQL reaches here: identifiers of the engine's own making, every value bound as a parameter.
        query = f"SELECT d.row FROM docs d WHERE d.index_id = ? AND ({text})"  # noqa: S608
        return {row for (row,) in self.db.execute(query, (self.record.id, *params))}

    # Scoring

    def scores(self, clause: Any) -> Rows:
        kind, spec = _one(clause)
        boost = float(spec.get("boost", 1.0)) if isinstance(spec, Mapping) and kind != "knn" else 1.0
        if kind == "bool":
            return self._bool_scores(spec)
        if kind == "match":
            return self._match_scores(spec)
        if kind == "multi_match":
            return self._multi_match_scores(spec)
        if kind == "knn":
            return self._knn_scores(spec)
        condition = self.sql(clause)
        assert condition is not None
        return dict.fromkeys(self.rows_where(condition), boost)

    def _bool_scores(self, spec: Mapping[str, Any]) -> Rows:
        condition = self._bool_sql(spec)
        scoring = bool(spec.get("must") or spec.get("should"))
        if condition is not None:
            return dict.fromkeys(self.rows_where(condition), 1.0 if scoring else 0.0)
        pure: list[SQL] = []
        allowed: set[int] | None = None
        for clause in _clauses(spec.get("filter", [])):
            compiled = self.sql(clause)
            if compiled is None:
                found = set(self.scores(clause))
                allowed = found if allowed is None else allowed & found
            else:
                pure.append(compiled)
        excluded: set[int] = set()
        for clause in _clauses(spec.get("must_not", [])):
            compiled = self.sql(clause)
            if compiled is None:
                excluded |= set(self.scores(clause))
            else:
                pure.append((f"NOT ({compiled[0]})", compiled[1]))
        if pure:
            passing, failing = self.cached_restriction(
                (" AND ".join(f"({text})" for text, _ in pure), [p for _, ps in pure for p in ps])
            )
            excluded |= failing
            if passing is not None:
                allowed = passing if allowed is None else allowed & passing
        must = [self.scores(clause) for clause in _clauses(spec.get("must", []))]
        should = [self.scores(clause) for clause in _clauses(spec.get("should", []))]
        minimum = self._minimum_should_match(spec, default=0 if must or spec.get("filter") else 1) if should else 0
        if must:
            candidates = set.intersection(*(set(scores) for scores in must))
        elif minimum > 0:
            candidates = set().union(*should)
        elif allowed is not None:
            candidates = set(allowed)
        else:
            candidates = self.rows_where(("1", []))
        if allowed is not None:
            candidates &= allowed
        candidates -= excluded
        boost = float(spec.get("boost", 1.0))
        result: Rows = {}
        for row in candidates:
            matched = [scores[row] for scores in should if row in scores]
            if len(matched) < minimum:
                continue
            result[row] = boost * (sum(scores[row] for scores in must) + sum(matched))
        return result

    def _match_scores(self, spec: Mapping[str, Any]) -> Rows:
        name, value = _one(spec, "match")
        options: Mapping[str, Any] = value if isinstance(value, Mapping) else {"query": value}
        _check_keys(options, ("query", "operator", "boost"), "match")
        return self._text_scores([(name, float(options.get("boost", 1.0)))], options, "best_fields")

    def _multi_match_scores(self, spec: Mapping[str, Any]) -> Rows:
        _check_keys(spec, ("query", "fields", "type", "operator", "tie_breaker", "boost"), "multi_match")
        fields = spec.get("fields")
        if not isinstance(fields, list) or not fields:
            raise Unsupported("multi_match needs a non-empty list of fields in the embedded engine")
        boosted: list[tuple[str, float]] = []
        for entry in fields:
            name, _, weight = str(entry).partition("^")
            if "*" in name:
                raise Unsupported(f"field pattern {name!r} in multi_match is not supported by the embedded engine")
            boosted.append((name, float(weight) if weight else 1.0))
        kind = str(spec.get("type", "best_fields"))
        if kind not in ("best_fields", "most_fields", "cross_fields"):
            raise Unsupported(f"multi_match type [{kind}] is not supported by the embedded engine")
        scores = self._text_scores(boosted, spec, kind)
        boost = float(spec.get("boost", 1.0))
        return {row: score * boost for row, score in scores.items()} if boost != 1.0 else scores

    def _text_scores(self, fields: Sequence[tuple[str, float]], options: Mapping[str, Any], kind: str) -> Rows:
        text = options.get("query")
        if not isinstance(text, (str, int, float)) or isinstance(text, bool):
            raise Unsupported("a match query needs a string 'query'")
        operator = str(options.get("operator", "or")).lower()
        if operator not in ("or", "and"):
            raise Unsupported(f"operator {operator!r}")
        mapped: list[tuple[Field, float]] = []
        for name, boost in fields:
            field = self.schema.fields.get(name)
            if field is None:
                continue
            if field.type != "text":
                raise Unsupported(
                    f"full-text match on {field.type} field [{name}] is not supported by the embedded engine"
                )
            mapped.append((field, boost))
        if kind == "cross_fields":
            return self._fts(mapped, str(text), operator)
        per_field = [
            {row: score * boost for row, score in self._fts([(field, 1.0)], str(text), operator).items()}
            for field, boost in mapped
        ]
        combined: Rows = {}
        tie_breaker = float(options.get("tie_breaker", 0.0))
        for row in set().union(*per_field):
            found = [scores[row] for scores in per_field if row in scores]
            best = max(found)
            combined[row] = sum(found) if kind == "most_fields" else best + tie_breaker * (sum(found) - best)
        return combined

    def _fts(self, fields: Sequence[tuple[Field, float]], text: str, operator: str) -> Rows:
        """BM25 over ``fields`` as one blended field per FTS5 table (boosts weight term frequencies)."""
        result: Rows = {}
        for kind, columns in self.layout.items():
            groups: dict[str, list[str]] = {}
            weights = dict.fromkeys(columns.values(), 0.0)
            for field, boost in fields:
                if field.path not in columns:
                    continue
                assert field.analysis is not None
                terms = fts_terms(field.analysis.analyze(text), operator)
                if terms is None:
                    continue
                groups.setdefault(terms, []).append(columns[field.path])
                weights[columns[field.path]] = boost
            if not groups:
                continue
            expression = " OR ".join(f"{{{' '.join(cols)}}} : {terms}" for terms, cols in groups.items())
            table = fts_table(self.record.id, kind)
            arguments = ", ".join(str(weights[column]) for column in columns.values())
            query = f"SELECT rowid, -bm25({table}, {arguments}) FROM {table} WHERE {table} MATCH ?"  # noqa: S608
            for row, score in self.db.execute(query, (expression,)):
                result[row] = result.get(row, 0.0) + float(score)
        return result

    def _knn_scores(self, spec: Mapping[str, Any]) -> Rows:
        name, options = _one(spec, "knn")
        if not isinstance(options, Mapping):
            raise Unsupported("knn needs an object of options")
        _check_keys(options, ("vector", "k", "filter", "method_parameters", "boost"), "knn")
        field = self.schema.fields.get(name)
        if field is None or field.type != "knn_vector":
            raise Unsupported(f"field [{name}] is not a knn_vector field")
        vector, k = options.get("vector"), options.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise Unsupported(f"knn k must be a positive integer, got {k!r}")
        if (
            not isinstance(vector, list)
            or len(vector) != field.dimension
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector)
        ):
            raise Unsupported(f"the query vector must be {field.dimension} numbers for field [{name}]")
        if not any(vector):
            raise Unsupported("a zero query vector has no cosine similarity")
        allowed: set[int] | None = None
        excluded: set[int] = set()
        if options.get("filter") is not None:
            compiled = self.sql(options["filter"])
            if compiled is None:
                allowed = set(self.scores(options["filter"]))
            else:
                allowed, excluded = self.cached_restriction(compiled)
        boost = float(options.get("boost", 1.0))
        found = self.vectors.nearest(
            self.db, self.record.id, self.record.generation, field, vector, k, allowed=allowed, excluded=excluded
        )
        return {row: score * boost for row, score in found.items()} if boost != 1.0 else found

    # The whole search

    def run(self, body: Mapping[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        _check_keys(body, BODY_KEYS, "search body")
        size, start = body.get("size", 10), body.get("from", 0)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (size, start)):
            raise Unsupported("size and from must be non-negative integers")
        if size + start > MAX_RESULT_WINDOW:
            raise Unsupported(f"from + size must be at most {MAX_RESULT_WINDOW}")
        sort = self._sort_spec(body.get("sort"))
        if sort is None and body.get("search_after") is not None:
            raise Unsupported("search_after needs a sort")
        scores = self.scores(body.get("query", {"match_all": {}}))
        keys: dict[int, tuple[Any, ...]] = {}
        wanted = start + size
        if sort is None:
            ordered = heapq.nsmallest(wanted, scores, key=lambda row: (-scores[row], row))
        else:
            after = body.get("search_after")
            if after is not None and (not isinstance(after, list) or len(after) != len(sort)):
                raise Unsupported("search_after needs one value per sort field")
            if len(sort) == 1 and sort[0][0] not in ("_score", "_doc"):
                keys = self._top_by_one_key(scores, *sort[0], None if after is None else after[0], wanted)
                ordered = list(keys)
            else:
                keys = self._sort_keys(scores, sort)
                candidates: Iterable[int] = scores
                if after is not None:
                    candidates = [row for row in scores if _compare(keys[row], tuple(after), sort) > 0]
                ordered = heapq.nsmallest(wanted, candidates, key=functools.cmp_to_key(_compare_rows(keys, sort)))
        page = ordered[start : start + size]
        hits = self._hits(page, scores, keys if sort is not None else None, body.get("_source", True))
        return {
            "took": int((time.perf_counter() - started) * 1000),
            "timed_out": False,
            "hits": {
                "total": {"value": len(scores), "relation": "eq"},
                "max_score": max(scores.values(), default=None) if sort is None else None,
                "hits": hits,
            },
        }

    def _sort_spec(self, sort: Any) -> list[tuple[str, bool]] | None:
        """(field, descending) pairs, or None for score order."""
        if sort is None:
            return None
        spec: list[tuple[str, bool]] = []
        for item in _clauses(sort):
            if isinstance(item, str):
                spec.append((item, item == "_score"))
                continue
            name, order = _one(item, "sort")
            if isinstance(order, Mapping):
                _check_keys(order, ("order",), f"sort on [{name}]")
                order = order.get("order", "asc")
            if order not in ("asc", "desc"):
                raise Unsupported(f"sort order {order!r}")
            spec.append((name, order == "desc"))
        if spec == [("_score", True)]:
            return None
        for name, _ in spec:
            if name not in ("_score", "_id", "_doc"):
                field = self.schema.fields.get(name)
                if field is not None and field.type in ("text", "knn_vector", "object"):
                    raise Unsupported(f"cannot sort on {field.type} field [{name}]")
        return spec

    def _top_by_one_key(
        self, scores: Rows, name: str, descending: bool, after: Any, wanted: int
    ) -> dict[int, tuple[Any, ...]]:
        """The first ``wanted`` rows by one field, after ``after``, with their sort values; SQLite orders,
        so a scan page reads only as far as it needs. Missing values come last."""
        field = self.schema.fields.get(name)
        order = "DESC" if descending else "ASC"
        beyond = "<" if descending else ">"
        params: list[Any]
        if name == "_id":
            query, params = "SELECT row, id AS v FROM docs WHERE index_id = ?", [self.record.id]
            if after is not None:
                query, params = query + f" AND id {beyond} ?", [*params, str(after)]
        elif field is None:
            query, params = "SELECT row, NULL AS v FROM docs WHERE 0", []
        else:
            pick = "max" if descending else "min"
            query = f"SELECT row, {pick}(value) AS v FROM fieldvals WHERE field = ? GROUP BY row"  # noqa: S608
            params = [field.path]
            if after is not None:
                query, params = query + f" HAVING v {beyond} ?", [*params, after]
        page: dict[int, tuple[Any, ...]] = {}
        for row, value in self.db.execute(f"{query} ORDER BY v {order}, row", params):
            if row in scores:
                page[row] = (value,)
                if len(page) == wanted:
                    return page
        if after is None:
            for row in sorted(set(scores) - set(page))[: wanted - len(page)]:
                page[row] = (None,)
        return page

    def _sort_keys(self, scores: Rows, sort: Sequence[tuple[str, bool]]) -> dict[int, tuple[Any, ...]]:
        """Row -> its sort values; a multi-valued field sorts by its least value ascending, greatest descending."""
        columns: list[Mapping[int, Any]] = []
        for name, descending in sort:
            field = self.schema.fields.get(name)
            params: list[Any]
            if name == "_id":
                query, params = "SELECT row, id FROM docs WHERE index_id = ?", [self.record.id]
            elif name in ("_score", "_doc") or field is None:
                columns.append({})
                continue
            else:
                pick = "max" if descending else "min"
                query = f"SELECT row, {pick}(value) FROM fieldvals WHERE field = ? GROUP BY row"  # noqa: S608
                params = [field.path]
            columns.append({row: value for row, value in self.db.execute(query, params) if row in scores})
        return {
            row: tuple(
                scores[row] if name == "_score" else row if name == "_doc" else values.get(row)
                for (name, _), values in zip(sort, columns, strict=True)
            )
            for row in scores
        }

    def _hits(
        self, rows: Sequence[int], scores: Rows, keys: Mapping[int, tuple[Any, ...]] | None, source_spec: Any
    ) -> list[dict[str, Any]]:
        includes, excludes = _source_patterns(source_spec)
        stored = self.store.hits(rows)
        wanted_vectors = [
            f for f in self.schema.vector_fields if includes is not None and _selected(f.path, includes, excludes)
        ]
        vectors = {f.path: self.store.vectors_of(rows, f) for f in wanted_vectors}
        hits = []
        for row in rows:
            doc_id, source = stored[row]
            for field in wanted_vectors:
                if row in vectors[field.path]:
                    _put(source, list(field.source_path), vectors[field.path][row])
            hit: dict[str, Any] = {"_index": self.record.name, "_id": doc_id, "_score": scores[row]}
            if includes is not None:
                hit["_source"] = _filter_source(source, includes, excludes, "")
            if keys is not None:
                hit["_score"] = None
                hit["sort"] = list(keys[row])
            hits.append(hit)
        return hits


def _compare_rows(keys: Mapping[int, tuple[Any, ...]], sort: Sequence[tuple[str, bool]]) -> Callable[[int, int], int]:
    def compare(a: int, b: int) -> int:
        return _compare(keys[a], keys[b], sort) or (a > b) - (a < b)

    return compare


def _compare(a: Sequence[Any], b: Sequence[Any], sort: Sequence[tuple[str, bool]]) -> int:
    for left, right, (_, descending) in zip(a, b, sort, strict=True):
        if left == right:
            continue
        if left is None or right is None:  # missing values sort last either way
            return 1 if left is None else -1
        try:
            less = left < right
        except TypeError:
            less = str(left) < str(right)
        result = -1 if less else 1
        return -result if descending else result
    return 0


def _source_patterns(spec: Any) -> tuple[list[str] | None, list[str]]:
    """(include patterns, or None for no source; exclude patterns)."""
    if spec is True or spec is None:
        return [], []
    if spec is False:
        return None, []
    if isinstance(spec, str):
        return [spec], []
    if isinstance(spec, list):
        return [str(p) for p in spec], []
    if isinstance(spec, Mapping):
        _check_keys(spec, ("includes", "excludes"), "_source")
        includes, excludes = spec.get("includes", []), spec.get("excludes", [])
        return [*_clauses(includes)], [*_clauses(excludes)]
    raise Unsupported(f"_source {spec!r}")


def _selected(path: str, includes: Sequence[str], excludes: Sequence[str]) -> bool:
    if any(fnmatch.fnmatchcase(path, p) for p in excludes):
        return False
    return not includes or any(fnmatch.fnmatchcase(path, p) or path.startswith(p + ".") for p in includes)


def _filter_source(
    source: Mapping[str, Any], includes: Sequence[str], excludes: Sequence[str], prefix: str
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in source.items():
        path = prefix + key
        if _selected(path, includes, excludes):
            kept[key] = value
        elif isinstance(value, Mapping) and any(re.match(re.escape(path) + r"\.", p) for p in includes):
            inner = _filter_source(value, includes, excludes, path + ".")
            if inner:
                kept[key] = inner
    return kept


def _put(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
