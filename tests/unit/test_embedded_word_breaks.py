"""The embedded engine splits text into words as Lucene's standard tokenizer does (Unicode word breaks): the
expected tokens are OpenSearch 3.6's ``_analyze`` answers (tests/integration/test_analysis_parity.py checks
them against the live engine). An index keeps the split it was created with until it is reindexed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.analysis import analysis
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.analysis import ANALYSIS_VERSION, BUILTIN, field_analysis
from esbridge.engines.embedded.mapping import MappingError, schema_of
from esbridge.engines.embedded.store import IndexRecord
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.word_breaks import STANDARD_TOKENS


@pytest.mark.parametrize(("text", "tokens"), STANDARD_TOKENS)
def test_words_break_where_lucenes_standard_tokenizer_breaks_them(text: str, tokens: list[str]) -> None:
    assert BUILTIN["standard"].analyze(text) == tokens
    custom = field_analysis("mine", {"analyzer": {"mine": {"type": "custom", "tokenizer": "standard"}}})
    assert [token.lower() for token in custom.analyze(text)] == tokens  # no lowercase filter in this analyzer


def test_english_strips_possessives_and_keeps_dotted_names_whole() -> None:
    english = BUILTIN["english"].analyze("Ann's notes on dendron.topic.publish, version 2.5")
    assert english == ["ann", "note", "dendron.topic.publish", "version", "2.5"]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def ids(engine: EmbeddedEngine, query: str) -> list[str]:
    body = {"query": {"match": {"body": query}}}
    return sorted(hit.id for hit in engine.search("notes", body).hits)


MAPPING = {"mappings": {"properties": {"body": {"type": "text", "analyzer": "english"}}}}
DOCS = [
    BulkAction("index", "dotted", {"body": "Publish with dendron.topic.publish"}),
    BulkAction("index", "spaced", {"body": "A topic to publish"}),
]


def test_a_dotted_name_is_one_word_as_on_a_cluster(engine: EmbeddedEngine) -> None:
    engine.create_index("notes", MAPPING)
    engine.bulk("notes", DOCS)
    engine.refresh("notes")
    assert ids(engine, "dendron.topic.publish") == ["dotted"]
    assert ids(engine, "topic") == ["spaced"]


def test_an_index_created_with_the_earlier_word_split_keeps_it_until_a_reindex(engine: EmbeddedEngine) -> None:
    """As on OpenSearch, analysis is fixed when an index is created: an index made before (it records no
    analysis_version) still splits at every non-word character, at indexing and at search time alike."""
    engine.create_index("notes-v1", {**MAPPING, "settings": {"index": {"analysis_version": 1}}})
    engine.update_aliases([{"add": {"index": "notes-v1", "alias": "notes"}}])
    engine.bulk("notes", DOCS)
    engine.refresh("notes")
    assert ids(engine, "dendron.topic.publish") == ["dotted", "spaced"]

    IndexManager(engine, "notes", IndexParameters(dimension=2)).reindex()
    assert engine.get_index_settings("notes-v2")["analysis_version"] == ANALYSIS_VERSION
    assert ids(engine, "dendron.topic.publish") == ["dotted"]


def test_an_index_that_records_no_analysis_version_has_the_first() -> None:
    record = IndexRecord(1, "old", {"index": {}}, MAPPING["mappings"], 0)
    assert record.schema.version == 1
    body = record.schema.fields["body"].analysis
    assert body is not None and body.native == "esbridge_english"
    with pytest.raises(MappingError, match=r"index\.analysis_version must be a number"):
        schema_of(MAPPING["mappings"], {"analysis_version": "two"})


CODE_MAPPING = {
    "settings": {"index": {"analysis": analysis()}},
    "mappings": {"properties": {"code": {"type": "text", "analyzer": "esbridge_code"}}},
}


def code_ids(engine: EmbeddedEngine, index: str, query: str) -> list[str]:
    return sorted(hit.id for hit in engine.search(index, {"query": {"match": {"code": query}}}).hits)


def test_identifier_parts_keep_digits_with_their_letters_as_on_a_cluster(engine: EmbeddedEngine) -> None:
    """esbridge's code analyzer does not split on numerics: on OpenSearch ``D40`` is one token and does not match the
    ``d`` of ``d1onysus``; an index created with analysis version 2 keeps its letter-digit split until a reindex."""
    docs = [
        BulkAction("index", "handle", {"code": "@d1onysus#1514"}),
        BulkAction("index", "cell", {"code": "D40 = getUserName(utf8Decode)"}),
    ]
    for index, version in (("code-v2", 2), ("code-now", ANALYSIS_VERSION)):
        settings = {"index": {**CODE_MAPPING["settings"]["index"], "analysis_version": version}}
        engine.create_index(index, {**CODE_MAPPING, "settings": settings})
        engine.bulk(index, docs)
        engine.refresh(index)
    assert code_ids(engine, "code-now", "D40") == ["cell"]
    assert code_ids(engine, "code-now", "utf8") == []  # utf8Decode is one part: no case change after a digit
    assert code_ids(engine, "code-now", "user") == ["cell"]
    assert code_ids(engine, "code-v2", "D40") == ["cell", "handle"]


@pytest.mark.parametrize(
    ("options", "tokens"),
    [
        ({}, "abc s x s ABC it x O Neil"),
        ({"stem_english_possessive": "false"}, "abc s s x s s ABC S it s x O Neil s"),
        ({"preserve_original": True}, "abc's abc 's s x's's x s ABC'S ABC it's-x it x O'Neil's O Neil"),
    ],
)
def test_word_delimiter_drops_an_english_possessive_as_lucene_does(options: dict[str, object], tokens: str) -> None:
    """``stem_english_possessive`` is on by default: the ``'s`` after a word part is no token (OpenSearch 3.6's
    ``_analyze`` answers)."""
    analysis = {
        "analyzer": {"parts": {"tokenizer": "whitespace", "filter": ["delimit"]}},
        "filter": {"delimit": {"type": "word_delimiter", **options}},
    }
    assert field_analysis("parts", analysis).analyze("abc's 's x's's ABC'S it's-x O'Neil's") == tokens.split()
