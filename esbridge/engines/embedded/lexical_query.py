"""The query DSL subset as tantivy queries, so text scoring and filters run in one tantivy search.

``match`` is a disjunction (or conjunction, ``operator: and``) of term queries over the analysed tokens;
``multi_match`` ``best_fields`` a dis-max of per-field matches with ``tie_breaker``, ``most_fields`` their
sum, ``cross_fields`` per query term a dis-max over the fields, each field's IDF replaced by the blended
one (the largest document frequency among the fields, as Lucene's ``BlendedTermQuery``) through its
boost; ``field^boost`` a boost on the field's query.
Filters (``term``, ``terms``, ``range`` on numbers and dates, ``ids``, ``exists`` on keyword and numeric
fields, ``match_all``, ``match_none``, ``bool``) become tantivy queries scored as constants: their
``boost`` in a scoring position, 0 in a filter. ``translate`` answers None for what tantivy cannot express
here (``knn``, ranges over keywords, ``exists`` on text); the caller then evaluates the clause otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tantivy

from esbridge.engines.embedded.filters import (
    Unsupported,
    boost_of,
    check_keys,
    check_terms_count,
    clauses,
    coerce,
    date_span_of,
    minimum_should_match,
    number,
    one,
    range_bounds,
    range_limits,
    term_as_terms,
    terms_field,
)
from esbridge.engines.embedded.lexical_layout import ID, Layout
from esbridge.engines.embedded.mapping import Field

Occur = tantivy.Occur
_TEXT_QUERIES = frozenset({"match", "multi_match"})


def _boolean(parts: Sequence[tuple[tantivy.Occur, tantivy.Query]], minimum: int | None = None) -> tantivy.Query:
    if not parts:
        return tantivy.Query.empty_query()
    if minimum:
        return tantivy.Query.boolean_query(list(parts), minimum)
    return tantivy.Query.boolean_query(list(parts))


def _idf(frequency: int, documents: int) -> float:
    """BM25's IDF, as Lucene and tantivy compute it: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def _boosted(query: tantivy.Query, boost: float) -> tantivy.Query:
    return query if boost == 1.0 else tantivy.Query.boost_query(query, boost)


class Translator:
    """Builds tantivy queries over one index's ``Layout``."""

    def __init__(self, layout: Layout, searcher: tantivy.Searcher | None = None) -> None:
        """``searcher`` gives the document frequencies ``cross_fields`` blends; without one it does not blend."""
        self.layout = layout
        self.searcher = searcher
        self.documents = int(searcher.num_docs) if searcher is not None else 0
        self.schema = layout.schema
        self.fields = layout.fields.fields

    def translate(self, clause: Any, *, scoring: bool = True) -> tantivy.Query | None:
        kind, spec = one(clause)
        if kind in _TEXT_QUERIES:
            return self._match(spec) if kind == "match" else self._multi_match(spec)
        if kind == "bool":
            return self._bool(spec, scoring)
        handler: Callable[[Any], tantivy.Query | None] | None = getattr(self, f"_{kind}", None)
        if kind == "knn" or handler is None:
            return None
        found = handler(spec)
        if found is None:
            return None
        boost = boost_of(spec)
        return tantivy.Query.const_score_query(found, boost if scoring else 0.0)

    # Full text

    def _match(self, spec: Mapping[str, Any]) -> tantivy.Query:
        name, value = one(spec, "match")
        options: Mapping[str, Any] = value if isinstance(value, Mapping) else {"query": value}
        check_keys(options, ("query", "operator", "boost"), "match")
        query: tantivy.Query = self._text([(name, 1.0)], options, "best_fields", boost_of(options))
        return query

    def _multi_match(self, spec: Mapping[str, Any]) -> tantivy.Query:
        check_keys(spec, ("query", "fields", "type", "operator", "tie_breaker", "boost"), "multi_match")
        fields = spec.get("fields")
        if not isinstance(fields, list) or not fields:
            raise Unsupported("multi_match needs a non-empty list of fields in the embedded engine")
        boosted: list[tuple[str, float]] = []
        for entry in fields:
            name, _, weight = str(entry).partition("^")
            if "*" in name:
                raise Unsupported(f"field pattern {name!r} in multi_match is not supported by the embedded engine")
            boosted.append((name, number(weight, f"the boost of field [{name}]") if weight else 1.0))
        kind = str(spec.get("type", "best_fields"))
        if kind not in ("best_fields", "most_fields", "cross_fields"):
            raise Unsupported(f"multi_match type [{kind}] is not supported by the embedded engine")
        query: tantivy.Query = self._text(boosted, spec, kind, boost_of(spec))
        return query

    def _text(
        self, names: Sequence[tuple[str, float]], options: Mapping[str, Any], kind: str, boost: float
    ) -> tantivy.Query:
        text = options.get("query")
        if not isinstance(text, (str, int, float)) or isinstance(text, bool):
            raise Unsupported("a match query needs a string 'query'")
        operator = str(options.get("operator", "or")).lower()
        if operator not in ("or", "and"):
            raise Unsupported(f"operator {operator!r}")
        occur = Occur.Must if operator == "and" else Occur.Should
        tie_breaker = number(options.get("tie_breaker", 0.0), "tie_breaker")
        mapped: list[tuple[Field, float]] = []
        for name, weight in names:
            field = self.fields.get(name)
            if field is None:
                continue
            if field.type != "text":
                raise Unsupported(
                    f"full-text match on {field.type} field [{name}] is not supported by the embedded engine"
                )
            mapped.append((field, weight))
        if kind == "cross_fields":
            query = self._cross_fields(mapped, str(text), occur, tie_breaker)
        else:
            per_field = [_boosted(self._field_match(field, str(text), occur), weight) for field, weight in mapped]
            if kind == "most_fields":
                query = _boolean([(Occur.Should, q) for q in per_field])
            elif len(per_field) == 1:
                query = per_field[0]
            else:
                query = tantivy.Query.disjunction_max_query(per_field, tie_breaker) if per_field else _boolean([])
        return _boosted(query, boost)

    def _token(self, field: Field, token: str) -> tantivy.Query:
        if not token:  # the empty token is the padding every document has (``lengths``), never a word
            return tantivy.Query.empty_query()
        return tantivy.Query.term_query(self.schema, self.layout.text[field.path], token, index_option="freq")

    def _field_match(self, field: Field, text: str, occur: tantivy.Occur) -> tantivy.Query:
        assert field.analysis is not None
        return _boolean([(occur, self._token(field, token)) for token in field.analysis.analyze(text) if token])

    def _cross_fields(
        self, mapped: Sequence[tuple[Field, float]], text: str, occur: tantivy.Occur, tie_breaker: float
    ) -> tantivy.Query:
        """Fields analysed alike form a group scored term by term (best field per term); groups by dis-max."""
        groups: dict[int, list[tuple[Field, float]]] = {}
        for field, weight in mapped:
            assert field.analysis is not None
            groups.setdefault(id(field.analysis.analyze), []).append((field, weight))
        grouped = []
        for members in groups.values():
            analysis = members[0][0].analysis
            assert analysis is not None
            terms = []
            for token in analysis.analyze(text):
                alternatives = [
                    _boosted(self._token(field, token), weight * blend)
                    for (field, weight), blend in zip(members, self._blend(members, token), strict=True)
                    if blend > 0
                ]
                if not alternatives:
                    continue
                terms.append(
                    alternatives[0]
                    if len(alternatives) == 1
                    else tantivy.Query.disjunction_max_query(alternatives, tie_breaker)
                )
            grouped.append(_boolean([(occur, term) for term in terms]))
        if len(grouped) == 1:
            return grouped[0]
        return tantivy.Query.disjunction_max_query(grouped, tie_breaker) if grouped else _boolean([])

    def _blend(self, members: Sequence[tuple[Field, float]], token: str) -> list[float]:
        """Per field, the factor that turns its own IDF of ``token`` into the blended one: Lucene's
        ``BlendedTermQuery`` scores every field with the largest document frequency among them, so a word
        rare in titles but common in bodies does not count as rare in titles. 0 where the field lacks it."""
        if self.searcher is None or len(members) == 1:
            return [1.0] * len(members)
        frequencies = [self.searcher.doc_freq(self.layout.text[field.path], token) for field, _ in members]
        common = max(frequencies)
        return [_idf(common, self.documents) / _idf(n, self.documents) if n else 0.0 for n in frequencies]

    # Boolean composition

    def _bool(self, spec: Mapping[str, Any], scoring: bool) -> tantivy.Query | None:
        check_keys(spec, ("must", "filter", "should", "must_not", "minimum_should_match", "boost"), "bool")
        parts: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for key, occur, scores in (
            ("must", Occur.Must, scoring),
            ("filter", Occur.Must, False),
            ("must_not", Occur.MustNot, False),
            ("should", Occur.Should, scoring),
        ):
            for clause in clauses(spec.get(key, [])):
                query = self.translate(clause, scoring=scores)
                if query is None:
                    return None
                parts.append((occur, query))
        should = [query for occur, query in parts if occur == Occur.Should]
        required = any(occur == Occur.Must for occur, _ in parts)
        minimum = minimum_should_match(spec, optional=len(should), required=required) if should else 0
        if not required and not minimum:
            parts.append((Occur.Must, tantivy.Query.const_score_query(tantivy.Query.all_query(), 0.0)))
        if minimum > len(should):
            return tantivy.Query.empty_query()
        query = _boolean(parts, minimum if minimum > 1 or (minimum == 1 and required) else None)
        return _boosted(query, boost_of(spec) if scoring else 1.0)

    # Filters

    def _filter_field(self, name: str, what: str) -> Field | None:
        if name == "_id":
            return Field("_id", "keyword", ())
        field = self.fields.get(name)
        if field is not None and field.type in ("text", "knn_vector", "object"):
            raise Unsupported(f"{what} on {field.type} field [{name}] is not supported by the embedded engine")
        return field

    def _tantivy_name(self, field: Field) -> str:
        if field.path == "_id":
            return ID
        return self.layout.keyword.get(field.path) or self.layout.number[field.path]

    def _match_all(self, spec: Mapping[str, Any]) -> tantivy.Query:
        check_keys(spec, ("boost",), "match_all")
        return tantivy.Query.all_query()

    def _match_none(self, spec: Mapping[str, Any]) -> tantivy.Query:
        return tantivy.Query.empty_query()

    def _ids(self, spec: Mapping[str, Any]) -> tantivy.Query:
        check_keys(spec, ("values", "boost"), "ids")
        values = [str(v) for v in spec.get("values", [])]
        return tantivy.Query.term_set_query(self.schema, ID, values) if values else tantivy.Query.empty_query()

    def _term(self, spec: Mapping[str, Any]) -> tantivy.Query:
        return self._terms(term_as_terms(spec))

    def _terms(self, spec: Mapping[str, Any]) -> tantivy.Query:
        name, values = terms_field(spec)
        field = self._filter_field(name, "terms")
        if field is None or not values:
            return tantivy.Query.empty_query()
        check_terms_count(values, self.layout.fields)
        name = self._tantivy_name(field)
        if field.type == "date":  # each value stands for its span, as a range of one value
            spans = dict.fromkeys(date_span_of(field, value) for value in values)
            return _boolean(
                [
                    (
                        Occur.Should,
                        tantivy.Query.range_query(
                            self.schema, name, tantivy.FieldType.Float, first, last + 1.0, True, False
                        ),
                    )
                    for first, last in spans
                ]
            )
        coerced = [coerce(field, value) for value in values]
        if name in self.layout.number.values():
            return _boolean(
                [
                    (Occur.Should, tantivy.Query.range_query(self.schema, name, tantivy.FieldType.Float, v, v))
                    for v in dict.fromkeys(float(v) for v in coerced)
                ]
            )
        return tantivy.Query.term_set_query(self.schema, name, [str(v) for v in coerced])

    def _range(self, spec: Mapping[str, Any]) -> tantivy.Query | None:
        name, bounds = range_bounds(spec)
        field = self._filter_field(name, "range")
        if field is None:
            return tantivy.Query.empty_query()
        if field.path not in self.layout.number:
            return None
        lower, include_lower, upper, include_upper = range_limits(field, bounds)
        lower, upper = (None if n is None else float(n) for n in (lower, upper))
        if lower is None and upper is None:
            return tantivy.Query.exists_query(self.layout.number[field.path])
        name = self.layout.number[field.path]
        kind = tantivy.FieldType.Float
        return tantivy.Query.range_query(self.schema, name, kind, lower, upper, include_lower, include_upper)

    def _exists(self, spec: Mapping[str, Any]) -> tantivy.Query | None:
        check_keys(spec, ("field", "boost"), "exists")
        field = self.fields.get(str(spec.get("field", "")))
        if field is None:
            return tantivy.Query.empty_query()
        name = self.layout.keyword.get(field.path) or self.layout.number.get(field.path)
        return None if name is None else tantivy.Query.exists_query(name)
