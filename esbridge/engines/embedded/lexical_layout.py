"""The tantivy schema of one index's mapping, and the tantivy document each row of the database becomes.

Fields with a built-in analyzer are analysed by tantivy's registered chain (``analysis.NATIVE``); custom analyzers
run in Python and hand tantivy their tokens joined by a separator that a registered tokenizer splits on. Keyword
fields are indexed verbatim, numbers, dates (epoch milliseconds) and booleans (0/1) as ``f64``, all as fast fields,
so filters run inside the search. ``_row`` (the database row) is the join key. The layout's digest names the
directory it is built in (``lexical_folders``), so a mapping that adds fields gets a new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import tantivy

from esbridge.engines.embedded.mapping import NUMERIC, Field, Schema
from esbridge.engines.embedded.shapes import flat_items, value_at
from esbridge.engines.embedded.values import ROUNDED, readable_value, stored_number

SEPARATOR = "\x1f"
TOKENIZER = "esbridge_tokens"
ROW = "_row"
ID = "_id"
FORMAT = 2
"""Part of every layout digest: a change to how documents are indexed here builds new directories. 2: numbers
as a cluster stores them (``values.stored_number``) and dates as read now; a layout without number, date or
boolean fields keeps 1, as nothing it indexes changed."""


def separator_tokenizer() -> tantivy.TextAnalyzer:
    """The tokenizer of ``TOKENIZER``: splits the tokens a custom analyzer joined with ``SEPARATOR``."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(f"[^{SEPARATOR}]+")).build()


class Layout:
    """The tantivy schema for one index's mapping: field path -> tantivy field name, by kind."""

    def __init__(self, schema: Schema) -> None:
        self.fields = schema
        self.text: dict[str, str] = {}
        tokenizers: dict[str, str] = {}
        self.keyword: dict[str, str] = {}
        self.number: dict[str, str] = {}
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field(ROW, indexed=True, fast=True)
        builder.add_text_field(ID, tokenizer_name="raw", index_option="basic")
        for field in sorted(schema.fields.values(), key=lambda f: f.path):
            if field.type == "text":
                assert field.analysis is not None
                name = self.text[field.path] = f"t{len(self.text)}"
                tokenizer = tokenizers[name] = field.analysis.native or TOKENIZER
                builder.add_text_field(name, tokenizer_name=tokenizer, index_option="freq")
            elif field.type == "keyword":
                name = self.keyword[field.path] = f"k{len(self.keyword)}"
                builder.add_text_field(name, tokenizer_name="raw", index_option="basic", fast=True)
            elif field.type in NUMERIC or field.type in ("date", "boolean"):
                name = self.number[field.path] = f"n{len(self.number)}"
                builder.add_float_field(name, indexed=True, fast=True)
        self.schema = builder.build()
        # Per place in _source, every tantivy field that reads it: a sub-field reads its parent's value,
        # so each value is looked up (and its strings listed) once per document, not once per field.
        self._sources: dict[tuple[str, ...], _Readers] = {}
        for path, name in self.text.items():
            field = schema.fields[path]
            readers = self._sources.setdefault(field.source_path, _Readers())
            assert field.analysis is not None
            if field.analysis.native is not None:
                readers.native.append(name)
            else:
                readers.custom.append((name, field))
        for kinds, numeric in ((self.keyword, False), (self.number, True)):
            for path, name in kinds.items():
                field = schema.fields[path]
                self._sources.setdefault(field.source_path, _Readers()).scalars.append((name, field, numeric))
        # The same, by the first key of each place: a document is read by its own keys, which are fewer than
        # the mapping's fields.
        self._by_key: dict[str, list[tuple[tuple[str, ...], _Readers]]] = {}
        for place, readers in self._sources.items():
            self._by_key.setdefault(place[0], []).append((place, readers))
        form = FORMAT if self.number else 1
        described = json.dumps([form, self.text, tokenizers, self.keyword, self.number], sort_keys=True)
        self.digest = hashlib.sha256(described.encode()).hexdigest()[:12]

    def document(
        self,
        row: int,
        doc_id: str,
        source: Mapping[str, Any],
        pads: Mapping[str, tantivy.PreTokenizedString] | None = None,
    ) -> tantivy.Document:
        """tantivy's document for one row; ``pads``: the tokens added to each text field the document has text in
        (``lengths``)."""
        values: dict[str, list[Any]] = {ROW: [row], ID: [doc_id]}
        padded: list[str] = []
        by_key = self._by_key
        for key, top in source.items():
            places = by_key.get(key)
            if places is None:
                continue
            for path, readers in places:
                value = top if len(path) == 1 else value_at(source, path)
                if value is None:
                    continue
                if type(value) is str:
                    items = texts = [value]
                else:
                    items = flat_items(value)
                    texts = _texts(items) if readers.native or readers.custom else []
                if texts:
                    for name in readers.native:
                        values[name] = texts
                        if pads and name in pads and any(text and not text.isspace() for text in texts):
                            padded.append(name)
                    for name, field in readers.custom:
                        tokens = [token for text in texts for token in _analyze(field, text)]
                        if tokens:
                            values[name] = [SEPARATOR.join(tokens)]
                            if pads and name in pads:
                                padded.append(name)
                for name, field, numeric in readers.scalars:
                    found = _indexed(field, items, numeric)
                    if found:
                        values[name] = found
        document = tantivy.Document.from_dict(values, self.schema)
        for name in padded:
            assert pads is not None
            document.add_pre_tokenized_text(name, pads[name])
        return document

    def token_counts(
        self, documents: Sequence[tuple[int, str, Mapping[str, Any]]], names: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        """Per text field in ``names``: how many of ``documents`` have tokens in it, and how many tokens."""
        counts: dict[str, tuple[int, int]] = {}
        for path, name in self.text.items():
            if name not in names:
                continue
            field = self.fields.fields[path]
            having = total = 0
            for _, _, source in documents:
                value = value_at(source, field.source_path)
                if not value:
                    continue
                items = flat_items(value)
                tokens = sum(len(_analyze(field, text)) for text in _texts(items) if text.strip())
                having += tokens > 0
                total += tokens
            counts[name] = (having, total)
        return counts


class _Readers:
    """The tantivy fields that index one place in ``_source``."""

    def __init__(self) -> None:
        self.native: list[str] = []
        self.custom: list[tuple[str, Field]] = []
        self.scalars: list[tuple[str, Field, bool]] = []


def _texts(items: list[Any]) -> list[str]:
    """What a text field indexes of these values: strings, and numbers and booleans as their JSON text (as a
    cluster indexes ``123`` or ``true`` given to a text field)."""
    scalars = (str, int, float)
    return [item if isinstance(item, str) else json.dumps(item) for item in items if isinstance(item, scalars)]


def _analyze(field: Field, text: str) -> list[str]:
    assert field.analysis is not None
    return [token for token in field.analysis.analyze(text) if token and SEPARATOR not in token]


def _indexed(field: Field, items: list[Any], numeric: bool) -> list[Any]:
    """The values tantivy indexes for a keyword (text) or number (float) field; strings skip the conversion."""
    found: list[Any] = []
    for item in items:
        plain = type(item)
        if (plain is str and not numeric and field.type == "keyword" and field.ignore_above is None) or (
            plain is float and field.type in NUMERIC
        ):
            found.append(stored_number(field, item) if field.type in ROUNDED else item)
        elif item is not None and not isinstance(item, (Mapping, list)):
            value = readable_value(field, item)
            if value is None:
                continue
            if numeric:
                found.append(float(value))
            elif field.indexes(str(value)):
                found.append(str(value))
    return found
