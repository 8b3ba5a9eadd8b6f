"""Requests the embedded engine answers as OpenSearch does, or refuses clearly: strings that are not UTF-8 text,
and an analyzer's filters given as one string."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.analysis import field_analysis
from esbridge.errors import RequestRejected


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("docs", {"mappings": {"properties": {"tag": {"type": "keyword"}, "body": {"type": "text"}}}})
    engine.bulk("docs", [BulkAction("index", "1", {"tag": "a", "body": "hello"})])
    yield engine
    engine.close()


@pytest.mark.parametrize(
    "query",
    [
        {"terms": {"tag": ["a", "\ud800"]}},
        {"term": {"tag": "\ud800"}},
        {"ids": {"values": ["\ud800"]}},
        {"bool": {"filter": [{"terms": {"_id": ["\udfff"]}}]}},
        {"match": {"body": "x\ud800"}},
        {"range": {"tag": {"gte": "\ud800"}}},
    ],
)
def test_a_string_that_is_not_utf8_text_is_refused_naming_it(engine: EmbeddedEngine, query: dict[str, Any]) -> None:
    # Before: a bare ValueError (or UnicodeEncodeError) from inside the full-text index.
    with pytest.raises(RequestRejected, match=r"holds an unpaired surrogate U\+D[8F][0F][0F]") as refused:
        engine.search("docs", {"query": query})
    assert "\\ud" in str(refused.value) or "\\udfff" in str(refused.value)
    assert str(refused.value).encode()  # the refusal itself is UTF-8 text


def _analyzed(engine: EmbeddedEngine, analyzer: dict[str, Any]) -> list[str]:
    """The tokens of "Héllo World" in a field of an index created with ``analyzer``."""
    body = {
        "settings": {"analysis": {"analyzer": {"mine": {"type": "custom", "tokenizer": "standard", **analyzer}}}},
        "mappings": {"properties": {"text": {"type": "text", "analyzer": "mine"}}},
    }
    engine.create_index("analysed", body)
    try:
        analysis = engine.get_index_settings("analysed")["analysis"]
        return field_analysis("mine", analysis).analyze("Héllo World")
    finally:
        engine.delete_index("analysed")


def test_an_analyzers_filters_as_one_string_are_the_names_it_lists(engine: EmbeddedEngine) -> None:
    # OpenSearch reads "lowercase,asciifolding" as two filters and "" as none (tokens probed on 3.6); before, the
    # string was read character by character and the index refused ("token filter 'l'").
    assert _analyzed(engine, {"filter": "lowercase"}) == ["héllo", "world"]
    assert _analyzed(engine, {"filter": "lowercase, asciifolding"}) == ["hello", "world"]
    assert _analyzed(engine, {"filter": ""}) == ["Héllo", "World"]
    assert _analyzed(engine, {"filter": ["lowercase"], "char_filter": ""}) == ["héllo", "world"]


@pytest.mark.parametrize(
    ("analyzer", "refusal"),
    [
        ({"filter": 5}, r"filter 5: a list of names or a string of them is needed"),
        ({"char_filter": "html_strip"}, "char filters"),
    ],
)
def test_filters_the_engine_cannot_read_are_refused(
    engine: EmbeddedEngine, analyzer: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(RequestRejected, match=refusal):
        _analyzed(engine, analyzer)


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ({"type": "keyword", "copy_to": "all"}, "copy_to 'all'"),
        ({"type": "keyword", "null_value": "NULL"}, "null_value 'NULL'"),
        ({"type": "date", "null_value": "2000-01-01"}, "null_value '2000-01-01'"),
        ({"type": "keyword", "normalizer": "lowercase"}, "normalizer 'lowercase'"),
        ({"type": "date", "ignore_malformed": True}, "ignore_malformed True"),
        ({"type": "integer", "coerce": "false"}, "coerce 'false'"),
    ],
)
def test_field_parameters_the_engine_does_not_implement_are_refused_naming_them(
    engine: EmbeddedEngine, spec: dict[str, Any], named: str
) -> None:
    # Before: taken and then not applied, so a search answered otherwise than OpenSearch (probed on 3.6): a term on
    # the null_value or the copy_to target found nothing, a malformed date was refused, "ABC" stayed upper case.
    with pytest.raises(RequestRejected, match=rf"field 'f': {named} is not implemented by the embedded engine"):
        engine.create_index("fields", {"mappings": {"properties": {"f": spec}}})
    with pytest.raises(RequestRejected, match=rf"field 'f': {named} is not implemented"):
        engine.put_mapping("docs", {"f": spec})


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "keyword", "copy_to": [], "null_value": None, "normalizer": None},
        {"type": "date", "ignore_malformed": "false"},
        {"type": "integer", "coerce": True},
    ],
)
def test_those_parameters_at_their_defaults_are_taken(engine: EmbeddedEngine, spec: dict[str, Any]) -> None:
    engine.create_index("fields", {"mappings": {"properties": {"f": spec}}})
    assert engine.get_mapping("fields")["properties"]["f"] == spec
