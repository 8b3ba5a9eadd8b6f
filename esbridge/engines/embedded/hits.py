"""A search's page of results: sort orders, ``search_after``, and hits with their ``_source``."""

from __future__ import annotations

import fnmatch
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from esbridge.engines.embedded.filters import Unsupported, check_keys, clauses, one
from esbridge.engines.embedded.mapping import Schema
from esbridge.engines.embedded.store import IndexRecord, Store
from esbridge.engines.embedded.values import put_path

Rows = dict[int, float]


class Results:
    """Sorting and hit building for one index."""

    def __init__(self, store: Store, db: sqlite3.Connection, record: IndexRecord, schema: Schema) -> None:
        self.store = store
        self.db = db
        self.record = record
        self.schema = schema

    def sort_spec(self, sort: Any) -> list[tuple[str, bool]] | None:
        """(field, descending) pairs, or None for score order."""
        if sort is None:
            return None
        spec: list[tuple[str, bool]] = []
        for item in clauses(sort):
            if isinstance(item, str):
                spec.append((item, item == "_score"))
                continue
            name, order = one(item, "sort")
            if isinstance(order, Mapping):
                check_keys(order, ("order",), f"sort on [{name}]")
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

    def top_by_one_key(
        self, scores: Rows, name: str, descending: bool, after: Sequence[Any] | None, wanted: int
    ) -> dict[int, tuple[Any, ...]]:
        """The first ``wanted`` rows by one field, after the sort value ``after`` (one-item ``search_after``),
        with their sort values; SQLite orders, so a scan page reads only as far as it needs. Missing values
        come last."""
        if after is not None and after[0] is None:  # after a missing value come only its ties, passed over
            return {}
        value = None if after is None else after[0]
        field = self.schema.fields.get(name)
        order = "DESC" if descending else "ASC"
        beyond = "<" if descending else ">"
        params: list[Any]
        if name == "_id":
            query, params = "SELECT row, id AS v FROM docs WHERE index_id = ?", [self.record.id]
            if value is not None:
                query, params = query + f" AND id {beyond} ?", [*params, str(value)]
        elif field is None:
            query, params = "SELECT row, NULL AS v FROM docs WHERE 0", []
        else:
            pick = "max" if descending else "min"
            query = f"SELECT row, {pick}(value) AS v FROM fieldvals WHERE field = ? GROUP BY row"  # noqa: S608
            params = [field.path]
            if value is not None:
                query, params = query + f" HAVING v {beyond} ?", [*params, value]
        page: dict[int, tuple[Any, ...]] = {}
        for row, found in self.db.execute(f"{query} ORDER BY v {order}, row", params):
            if row in scores:
                page[row] = (found,)
                if len(page) == wanted:
                    return page
        if after is None:
            missing = set(scores) - set(page)
        elif field is not None and name != "_id":
            # Rows without a value come after every value, so after the last page of values too.
            valued = self.db.execute("SELECT DISTINCT row FROM fieldvals WHERE field = ?", [field.path])
            missing = set(scores).difference(row for (row,) in valued)
        else:
            missing = set()
        for row in sorted(missing)[: wanted - len(page)]:
            page[row] = (None,)
        return page

    def sort_keys(self, scores: Rows, sort: Sequence[tuple[str, bool]]) -> dict[int, tuple[Any, ...]]:
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

    def hits(
        self, rows: Sequence[int], scores: Rows, keys: Mapping[int, tuple[Any, ...]] | None, source_spec: Any
    ) -> list[dict[str, Any]]:
        includes, excludes = _source_patterns(source_spec)
        stored = self.store.hits(rows)
        wanted_vectors = [
            f for f in self.schema.vector_fields if includes is not None and _selected(f.path, includes, excludes)
        ]
        vectors = {f.path: self.store.vectors_of(rows, f) for f in wanted_vectors}
        hits = []
        chosen = _decisions(includes or [], excludes)
        for row in rows:
            if row not in stored:  # written or deleted between this search's database snapshot and its indices
                continue
            doc_id, source = stored[row]
            for field in wanted_vectors:
                if row in vectors[field.path]:
                    put_path(source, list(field.source_path), vectors[field.path][row])
            hit: dict[str, Any] = {"_index": self.record.name, "_id": doc_id, "_score": scores[row]}
            if includes is not None:
                hit["_source"] = _filter_source(source, includes, excludes, "", chosen)
            if keys is not None:
                hit["_score"] = None
                hit["sort"] = list(keys[row])
            hits.append(hit)
        return hits


def compare_rows(keys: Mapping[int, tuple[Any, ...]], sort: Sequence[tuple[str, bool]]) -> Callable[[int, int], int]:
    def by_keys(a: int, b: int) -> int:
        return compare(keys[a], keys[b], sort) or (a > b) - (a < b)

    return by_keys


def compare(a: Sequence[Any], b: Sequence[Any], sort: Sequence[tuple[str, bool]]) -> int:
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
        check_keys(spec, ("includes", "excludes"), "_source")
        includes, excludes = spec.get("includes", []), spec.get("excludes", [])
        return [*clauses(includes)], [*clauses(excludes)]
    raise Unsupported(f"_source {spec!r}")


def _matches(path: str, pattern: str) -> bool:
    if "*" in pattern or "?" in pattern or "[" in pattern:
        return fnmatch.fnmatchcase(path, pattern)
    return path == pattern


def _selected(path: str, includes: Sequence[str], excludes: Sequence[str]) -> bool:
    if any(_matches(path, p) for p in excludes):
        return False
    return not includes or any(_matches(path, p) or path.startswith(p + ".") for p in includes)


_DROP, _KEEP, _DESCEND, _KEEP_INSIDE = 0, 1, 2, 3
_WILDCARDS = frozenset("*?[")
_NOTHING = object()
_DECISIONS: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, int]] = {}
"""Per ``_source`` request, each path's decision: searches ask for the same few, so each path is decided once."""
_KEPT_DECISIONS = 64
_KEPT_PATHS = 4096


def _decisions(includes: Sequence[str], excludes: Sequence[str]) -> dict[str, int]:
    key = (tuple(includes), tuple(excludes))
    found = _DECISIONS.get(key)
    if found is None or len(found) > _KEPT_PATHS:
        if len(_DECISIONS) >= _KEPT_DECISIONS:
            _DECISIONS.clear()
        found = _DECISIONS[key] = {}
    return found


def _filter_source(
    source: Mapping[str, Any], includes: Sequence[str], excludes: Sequence[str], prefix: str, chosen: dict[str, int]
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in source.items():
        path = prefix + key
        decision = chosen.get(path)
        if decision is None:
            decision = chosen[path] = _decide(path, includes, excludes)
        if decision == _KEEP:
            kept[key] = value
        elif decision != _DROP:
            inner = _filter_value(value, includes, excludes, path, chosen, whole=decision == _KEEP_INSIDE)
            if inner is not _NOTHING:
                kept[key] = inner
    return kept


def _filter_value(
    value: Any, includes: Sequence[str], excludes: Sequence[str], path: str, chosen: dict[str, int], *, whole: bool
) -> Any:
    """An object filtered by the paths below ``path``, a list item by item; any other value is kept only where
    ``path`` itself was selected (``whole``). As OpenSearch does: a selected object emptied by its exclusions
    stays (``{}``), an object in a list that ends up empty goes."""
    if isinstance(value, Mapping):
        inner = _filter_source(value, includes, excludes, path + ".", chosen)
        return inner if inner or whole else _NOTHING
    if isinstance(value, list):
        items = [_filter_value(item, includes, excludes, path, chosen, whole=whole) for item in value]
        kept = [item for item in items if item is not _NOTHING and item != {}]
        return kept if kept or whole else _NOTHING
    return value if whole else _NOTHING


def _decide(path: str, includes: Sequence[str], excludes: Sequence[str]) -> int:
    """Whether the value at ``path`` is kept whole, kept with what is excluded below it taken out, searched for
    included paths inside it, or dropped."""
    below = path + "."
    if _selected(path, includes, excludes):
        inside = any(p.startswith(below) or _WILDCARDS.intersection(p) for p in excludes)
        return _KEEP_INSIDE if inside else _KEEP
    # A wildcard may match a path inside (``*.c`` matches ``obj.inner.c``, as ``*`` spans dots in OpenSearch).
    return _DESCEND if any(p.startswith(below) or _WILDCARDS.intersection(p) for p in includes) else _DROP
