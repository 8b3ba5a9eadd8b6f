"""The subset of the OpenSearch query DSL that esbridge sends, run over tantivy, usearch and SQLite.

Supported: ``bool`` (must, filter, should, must_not, minimum_should_match as a count or percentage, boost),
``match_all``, ``match_none``, ``term``, ``terms`` (on a mapped field at most ``index.max_terms_count`` values, 65,536
unless the index's settings say otherwise, as on a cluster), ``range`` (numbers, dates, keywords; no date math),
``ids``, ``exists``, ``match`` and ``multi_match`` (``best_fields``, ``most_fields``, ``cross_fields``;
``operator``, ``tie_breaker``, ``field^boost``), and ``knn`` (``vector``, ``k``, ``filter``;
``method_parameters`` accepted, the graph's own search width used). Search bodies may carry ``size``,
``from``, ``_source``, ``sort`` (keyword, number and date fields, ``_id``, ``_score``), ``search_after``,
``track_total_hits`` (as OpenSearch: exact up to 10,000 by default, ``false`` for none, which lets tantivy
skip what cannot reach the top) and ``timeout`` (accepted, not enforced: a search runs to completion).
Anything else is refused with ``Unsupported``, naming the construct.

A query that tantivy can express whole (text, filters and their ``bool`` combinations: see
``lexical_query``) runs as one tantivy search for the top ``from + size``; a top-level ``knn`` runs on its
field's graph (see ``ann``), exact when the index has no ``index.knn: true`` setting, as in OpenSearch.
Anything else (``knn`` inside a ``bool``, sorts on fields, filters tantivy cannot express) is scored
clause by clause into row -> score maps and combined here.
"""

from __future__ import annotations

import functools
import heapq
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

import tantivy

from esbridge.engines.embedded.datadir import DataDir
from esbridge.engines.embedded.filters import (
    SQL,
    SqlFilters,
    Unsupported,
    boost_of,
    check_keys,
    clauses,
    minimum_should_match,
    one,
)
from esbridge.engines.embedded.handles import Handles
from esbridge.engines.embedded.hits import Results, compare, compare_rows
from esbridge.engines.embedded.lexical_query import Translator
from esbridge.engines.embedded.scalars import unpaired_in
from esbridge.engines.embedded.store import IndexRecord, Store

Rows = dict[int, float]
Restriction = tuple[set[int] | None, set[int]]

BODY_KEYS = frozenset({"query", "size", "from", "_source", "sort", "search_after", "track_total_hits", "timeout"})
MAX_RESULT_WINDOW = 10_000
TRACKED_BY_DEFAULT = 10_000
"""Matches counted exactly when a body does not say (OpenSearch's and Elasticsearch's default)."""

__all__ = ["BODY_KEYS", "MAX_RESULT_WINDOW", "Searcher", "Unsupported"]


_NUMBER_TYPES = {float, int}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def approximate(record: IndexRecord) -> bool:
    """Whether kNN may use the graph: OpenSearch's ``index.knn`` setting; without it the search is exact."""
    return str(record.settings.get("index", {}).get("knn", "false")).lower() == "true"


def _all_but(query: tantivy.Query) -> tantivy.Query:
    everything = tantivy.Query.all_query()
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, everything), (tantivy.Occur.MustNot, query)])


def _only_exclusions(clause: Any) -> list[Any] | None:
    """The ``must_not`` clauses of a ``bool`` that has nothing else, or None."""
    if not isinstance(clause, Mapping) or list(clause) != ["bool"] or not isinstance(clause["bool"], Mapping):
        return None
    spec = clause["bool"]
    if any(clauses(spec.get(key, [])) for key in ("must", "filter", "should")) or set(spec) - {
        "must",
        "filter",
        "should",
        "must_not",
    }:
        return None
    excluded = clauses(spec.get("must_not", []))
    return excluded or None


class Searcher:
    """One search against one index."""

    def __init__(self, store: Store, record: IndexRecord, handles: Handles, shared: DataDir) -> None:
        self.store = store
        self.db = store.db
        self.record = record
        self.schema = record.schema
        self.handles = handles
        self.shared = shared
        self.filters = SqlFilters(store, self.db, record)
        self.translator = Translator(handles.lexical.layout, handles.lexical.searcher())
        self.results = Results(store, self.db, record, self.schema)

    # Filters as row sets

    def restriction(self, clause: Any) -> Restriction:
        """(rows that pass ``clause``, nothing) or (None, rows that fail), whichever set is smaller; cached
        until the index is written, since filters such as the lifecycle exclusion repeat in every search."""
        return self.shared.restriction(self._key(clause), lambda: self._restriction(clause))  # type: ignore[no-any-return]

    def _key(self, clause: Any) -> tuple[Any, ...]:
        # The structures' own state too: beside a write under way they are older than the record (``under_way``).
        text = self.handles.lexical
        return (
            self.record.id,
            self.record.generation,
            self.handles.generation,
            text.applied,
            json.dumps(clause, sort_keys=True, default=str),
        )

    def _restriction(self, clause: Any) -> Restriction:
        text = self.handles.lexical
        exclusion = _only_exclusions(clause)
        if exclusion is not None:  # the lifecycle filter: read the few rows it excludes, not the many it keeps
            failing = self.translator.translate({"bool": {"should": exclusion}}, scoring=False)
            if failing is not None:
                if text.count(failing) * 2 <= text.num_docs():
                    return None, set(text.scores(failing))
                return set(text.scores(_all_but(failing))), set()  # it excludes most: read the few it keeps
        query = self.translator.translate(clause, scoring=False)
        if query is None:
            compiled = self.filters.sql(clause)
            if compiled is None:
                return set(self.scores(clause)), set()
            return self.filters.restriction(compiled)
        if text.count(query) * 2 <= text.num_docs():
            return set(text.scores(query)), set()
        return None, set(text.scores(_all_but(query)))

    def _sql_restriction(self, condition: SQL) -> Restriction:
        key = (self.record.id, self.record.generation, condition[0], *condition[1])
        return self.shared.restriction(key, lambda: self.filters.restriction(condition))  # type: ignore[no-any-return]

    # Scoring, clause by clause

    def scores(self, clause: Any) -> Rows:
        kind, spec = one(clause)
        if kind == "knn":
            return self._knn_scores(spec)
        query = self.translator.translate(clause)
        if query is not None:
            return self.handles.lexical.scores(query)
        if kind == "bool":
            return self._bool_scores(spec)
        condition = self.filters.sql(clause)
        if condition is None:
            raise Unsupported(f"query type [{kind}] is not supported by the embedded engine")
        boost = boost_of(spec)
        return dict.fromkeys(self.filters.rows_where(condition), boost)

    def _bool_scores(self, spec: Mapping[str, Any]) -> Rows:
        condition = self.filters.sql({"bool": spec})
        scoring = bool(spec.get("must") or spec.get("should"))
        if condition is not None:
            return dict.fromkeys(self.filters.rows_where(condition), 1.0 if scoring else 0.0)
        pure: list[SQL] = []
        allowed: set[int] | None = None
        for clause in clauses(spec.get("filter", [])):
            compiled = self.filters.sql(clause)
            if compiled is None:
                found = set(self.scores(clause))
                allowed = found if allowed is None else allowed & found
            else:
                pure.append(compiled)
        excluded: set[int] = set()
        for clause in clauses(spec.get("must_not", [])):
            compiled = self.filters.sql(clause)
            if compiled is None:
                excluded |= set(self.scores(clause))
            else:
                pure.append((f"NOT ({compiled[0]})", compiled[1]))
        if pure:
            passing, failing = self._sql_restriction(
                (" AND ".join(f"({text})" for text, _ in pure), [p for _, ps in pure for p in ps])
            )
            excluded |= failing
            if passing is not None:
                allowed = passing if allowed is None else allowed & passing
        must = [self.scores(clause) for clause in clauses(spec.get("must", []))]
        should = [self.scores(clause) for clause in clauses(spec.get("should", []))]
        required = bool(must or spec.get("filter"))
        minimum = minimum_should_match(spec, optional=len(should), required=required) if should else 0
        if must:
            candidates = set.intersection(*(set(scores) for scores in must))
        elif minimum > 0:
            candidates = set().union(*should)
        elif allowed is not None:
            candidates = set(allowed)
        else:
            candidates = self.filters.rows_where(("1", []))
        if allowed is not None:
            candidates &= allowed
        candidates -= excluded
        boost = boost_of(spec)
        result: Rows = {}
        for row in candidates:
            matched = [scores[row] for scores in should if row in scores]
            if len(matched) < minimum:
                continue
            result[row] = boost * (sum(scores[row] for scores in must) + sum(matched))
        return result

    def _knn_scores(self, spec: Mapping[str, Any]) -> Rows:
        name, options = one(spec, "knn")
        if not isinstance(options, Mapping):
            raise Unsupported("knn needs an object of options")
        check_keys(options, ("vector", "k", "filter", "method_parameters", "boost"), "knn")
        field = self.schema.fields.get(name)
        if field is None or field.type != "knn_vector":
            raise Unsupported(f"field [{name}] is not a knn_vector field")
        vector, k = options.get("vector"), options.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise Unsupported(f"knn k must be a positive integer, got {k!r}")
        if (
            not isinstance(vector, list)
            or len(vector) != field.dimension
            or not (set(map(type, vector)) <= _NUMBER_TYPES or all(_is_number(x) for x in vector))
        ):
            raise Unsupported(f"the query vector must be {field.dimension} numbers for field [{name}]")
        if not any(vector):
            raise Unsupported("a zero query vector has no cosine similarity")
        allowed: set[int] | None = None
        excluded: set[int] = set()
        subset = None
        if options.get("filter") is not None:
            allowed, excluded = self.restriction(options["filter"])
            subset = self._key(options["filter"])
        boost = boost_of(options)
        graph = self.handles.vectors[field.path]
        found = graph.nearest(
            vector,
            k,
            allowed=allowed,
            excluded=excluded,
            exact=not approximate(self.record),
            subset=subset,
            behind=self.shared.behind(self.store, self.record, self.handles, field.path),
            floats=lambda rows: self.store.vector_blobs(rows, field.path),
        )
        return {row: score * boost for row, score in found.items()} if boost != 1.0 else found

    # The whole search

    def run(self, body: Mapping[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        check_keys(body, BODY_KEYS, "search body")
        if (problem := unpaired_in(body)) is not None:
            raise Unsupported(f"the request's {problem}")
        size, start = body.get("size", 10), body.get("from", 0)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (size, start)):
            raise Unsupported("size and from must be non-negative integers")
        if size + start > MAX_RESULT_WINDOW:
            raise Unsupported(f"from + size must be at most {MAX_RESULT_WINDOW}")
        sort = self.results.sort_spec(body.get("sort"))
        if sort is None and body.get("search_after") is not None:
            raise Unsupported("search_after needs a sort")
        clause = body.get("query", {"match_all": {}})
        tracked = _tracked(body.get("track_total_hits", TRACKED_BY_DEFAULT))
        keys: dict[int, tuple[Any, ...]] = {}
        wanted = start + size
        top = self._top(clause, wanted, count=tracked is not False) if sort is None else None
        if top is not None:
            ordered, scores, total = top
        elif sort is None:
            scores = self.scores(clause)
            total = len(scores)
            ordered = heapq.nsmallest(wanted, scores, key=lambda row: (-scores[row], row))
        else:
            scores = self.scores(clause)
            total = len(scores)
            after = body.get("search_after")
            if after is not None and (
                not isinstance(after, list)
                or len(after) != len(sort)
                or any(isinstance(value, (Mapping, list)) for value in after)
            ):
                raise Unsupported("search_after needs one value (not an object or a list) per sort field")
            if len(sort) == 1 and sort[0][0] not in ("_score", "_doc"):
                keys = self.results.top_by_one_key(scores, *sort[0], after, wanted)
                ordered = list(keys)
            else:
                keys = self.results.sort_keys(scores, sort)
                candidates: Iterable[int] = scores
                if after is not None:
                    candidates = [row for row in scores if compare(keys[row], tuple(after), sort) > 0]
                ordered = heapq.nsmallest(wanted, candidates, key=functools.cmp_to_key(compare_rows(keys, sort)))
        page = ordered[start : start + size]
        hits = self.results.hits(page, scores, keys if sort is not None else None, body.get("_source", True))
        section: dict[str, Any] = {}
        if tracked is not False and total is not None:
            section["total"] = _total(total, tracked)
        section["max_score"] = max(scores.values(), default=None) if sort is None else None
        section["hits"] = hits
        return {"took": int((time.perf_counter() - started) * 1000), "timed_out": False, "hits": section}

    def _top(self, clause: Any, wanted: int, *, count: bool = True) -> tuple[list[int], Rows, int | None] | None:
        """The best ``wanted`` rows in score order, their scores and the match count (None when not ``count``ed),
        when one search finds them."""
        kind, spec = one(clause)
        if kind == "knn":
            scores = self._knn_scores(spec)
            return heapq.nsmallest(wanted, scores, key=lambda row: (-scores[row], row)), scores, len(scores)
        query = self.translator.translate(clause)
        if query is None:
            return None
        # Equal scores in row order, as the clause-by-clause path orders them: read on until the scores tied
        # with the last wanted row are all in (a longer list only when ties cross that boundary).
        limit = wanted + 1
        while True:
            found, total = self.handles.lexical.top(query, limit, count=count)
            if not wanted or len(found) < limit or len(found) <= wanted or found[-1][1] != found[wanted - 1][1]:
                break
            limit *= 4
        scores = dict(found)
        ordered = sorted(scores, key=lambda row: (-scores[row], row))[:wanted]
        return ordered, scores, total


def _tracked(value: Any) -> bool | int:
    if isinstance(value, bool) or (isinstance(value, int) and value >= 0):
        return value
    raise Unsupported(f"track_total_hits must be true, false or a non-negative count, not {value!r}")


def _total(total: int, tracked: bool | int) -> dict[str, Any]:
    """OpenSearch's ``hits.total``: exact up to the tracked count, then that count as a lower bound."""
    if tracked is True or total <= tracked:
        return {"value": total, "relation": "eq"}
    return {"value": tracked, "relation": "gte"}
