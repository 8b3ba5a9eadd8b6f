"""Analysis the embedded engine does not emulate is refused when an index is created, naming it, rather than
analysed otherwise than on a cluster: token filter options it does not read (tests/integration/
test_analysis_parity.py shows each changes a cluster's tokens) and a search analyzer other than the field's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.analysis import field_analysis
from esbridge.engines.embedded.mapping import schema_of

UNREAD = [
    ("word_delimiter_graph", "catenate_words", True),
    ("word_delimiter", "catenate_numbers", "true"),
    ("word_delimiter_graph", "catenate_all", True),
    ("word_delimiter", "generate_word_parts", False),
    ("word_delimiter_graph", "generate_number_parts", "false"),
    ("word_delimiter_graph", "protected_words", ["getUserName"]),
    ("word_delimiter", "protected_words_path", "protected.txt"),
    ("word_delimiter_graph", "type_table", ["- => ALPHA"]),
    ("word_delimiter", "type_table_path", "types.txt"),
    ("asciifolding", "preserve_original", True),
    ("lowercase", "language", "turkish"),
    ("stop", "remove_trailing", False),
    ("stop", "stopwords_path", "stop.txt"),
]
NEUTRAL = [  # Lucene's defaults, as given or as settings read back from a cluster hold them
    ("word_delimiter_graph", "catenate_words", False),
    ("word_delimiter", "catenate_all", "false"),
    ("word_delimiter_graph", "generate_word_parts", "true"),
    ("word_delimiter_graph", "protected_words", []),
    ("word_delimiter_graph", "adjust_offsets", False),
    ("word_delimiter_graph", "ignore_keywords", True),
    ("asciifolding", "preserve_original", "false"),
    ("stop", "remove_trailing", True),
]
TEXT = "getUserName PII-2024-0042 Wi-Fi café"


def _body(kind: str, option: str, value: Any) -> dict[str, Any]:
    return {
        "settings": {
            "analysis": {
                "filter": {"parts": {"type": kind, option: value}},
                "analyzer": {"code": {"type": "custom", "tokenizer": "whitespace", "filter": ["parts"]}},
            }
        },
        "mappings": {
            "properties": {"name": {"type": "keyword", "fields": {"code": {"type": "text", "analyzer": "code"}}}}
        },
    }


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


@pytest.mark.parametrize(("kind", "option", "value"), UNREAD)
def test_a_filter_option_the_engine_does_not_read_is_refused_naming_it(
    engine: EmbeddedEngine, kind: str, option: str, value: Any
) -> None:
    with pytest.raises(errors.RequestRejected) as refused:
        engine.create_index("code", _body(kind, option, value))
    message = str(refused.value)
    assert "field 'name.code'" in message
    assert f"token filter 'parts' of type '{kind}': option '{option}' ({value!r})" in message
    assert not engine.index_exists("code")


@pytest.mark.parametrize(("kind", "option", "value"), NEUTRAL)
def test_a_filter_option_at_lucenes_default_is_taken_and_changes_nothing(
    engine: EmbeddedEngine, kind: str, option: str, value: Any
) -> None:
    engine.create_index("code", _body(kind, option, value))
    analysis = _body(kind, option, value)["settings"]["analysis"]
    plain = {**analysis, "filter": {"parts": {"type": kind}}}
    assert field_analysis("code", analysis).analyze(TEXT) == field_analysis("code", plain).analyze(TEXT)


def test_the_options_the_engine_reads_are_taken(engine: EmbeddedEngine) -> None:
    body = _body("word_delimiter_graph", "preserve_original", True)
    body["settings"]["analysis"]["filter"]["parts"].update(
        split_on_case_change=False, split_on_numerics=False, stem_english_possessive=False
    )
    engine.create_index("code", body)
    engine.bulk("code", [BulkAction("index", "1", {"name": "getUserName Wi-Fi"})])
    found = engine.search("code", {"query": {"match": {"name.code": "Wi-Fi"}}})
    assert [hit.id for hit in found.hits] == ["1"]


def test_an_index_created_before_the_check_is_still_read() -> None:
    settings = _body("word_delimiter_graph", "catenate_words", True)["settings"]
    schema = schema_of(_body("lowercase", "x", 1)["mappings"], settings)
    assert schema.fields["name.code"].analysis is not None


def test_a_search_analyzer_other_than_the_fields_analyzer_is_refused(engine: EmbeddedEngine) -> None:
    mappings = {"properties": {"title": {"type": "text", "analyzer": "english", "search_analyzer": "standard"}}}
    with pytest.raises(errors.RequestRejected, match=r"field 'title': search_analyzer 'standard' differs from"):
        engine.create_index("titles", {"mappings": mappings})
    same = {"properties": {"title": {"type": "text", "analyzer": "english", "search_analyzer": "english"}}}
    engine.create_index("titles", {"mappings": same})
    quoted = {"body": {"type": "text", "search_quote_analyzer": "keyword"}}
    with pytest.raises(errors.RequestRejected, match=r"field 'body': search_quote_analyzer 'keyword' differs"):
        engine.put_mapping("titles", quoted)
    assert "body" not in engine.get_mapping("titles")["properties"]


def test_a_field_added_later_is_checked_as_at_creation(engine: EmbeddedEngine) -> None:
    body = _body("word_delimiter_graph", "catenate_words", False)
    body["settings"]["analysis"]["filter"]["joined"] = {"type": "word_delimiter_graph", "catenate_words": True}
    body["settings"]["analysis"]["analyzer"]["joined"] = {
        "type": "custom",
        "tokenizer": "whitespace",
        "filter": ["joined"],
    }
    engine.create_index("code", body)  # an analyzer no field uses is not read
    with pytest.raises(errors.RequestRejected, match=r"field 'other': .*option 'catenate_words' \(True\)"):
        engine.put_mapping("code", {"other": {"type": "text", "analyzer": "joined"}})
    assert "other" not in engine.get_mapping("code")["properties"]


def test_an_index_wide_default_analyzer_a_field_would_get_on_a_cluster_is_refused(engine: EmbeddedEngine) -> None:
    """On OpenSearch a text field without an analyzer is analysed with the index's ``analysis.analyzer.default``
    (``Foo-Bar`` stays one token with a whitespace one); the embedded engine would use ``standard``."""
    default = {"default": {"type": "custom", "tokenizer": "whitespace"}}
    text = {"properties": {"t": {"type": "text"}}}
    with pytest.raises(errors.RequestRejected, match=r"field 't': .*analysis\.analyzer\.default is not applied"):
        engine.create_index("d", {"settings": {"analysis": {"analyzer": default}}, "mappings": text})
    named = {"properties": {"t": {"type": "text", "analyzer": "default"}}}
    engine.create_index("d", {"settings": {"analysis": {"analyzer": default}}, "mappings": named})
    engine.bulk("d", [BulkAction("index", "1", {"t": "Foo-Bar baz"})])
    assert engine.search("d", {"query": {"match": {"t": "foo"}}}).total == 0
    assert engine.search("d", {"query": {"match": {"t": "Foo-Bar"}}}).total == 1
    searching = {"default_search": {"type": "custom", "tokenizer": "keyword"}}
    with pytest.raises(errors.RequestRejected, match=r"analysis\.analyzer\.default_search is not applied"):
        engine.create_index("s", {"settings": {"analysis": {"analyzer": searching}}, "mappings": named})
