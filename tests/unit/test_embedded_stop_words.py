"""A custom analyzer's ``stop`` filter matches Lucene's English stop words by case, as both clusters do: a path
analyzer that removes stop words before lowercasing keeps ``The``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.analysis import ANALYSIS_VERSION
from esbridge.engines.embedded.mapping import schema_of

PATH_TOKENS = {"type": "pattern", "pattern": "[/\\\\._\\-\\s]+"}
CHAINS: dict[str, list[Any]] = {
    "stop_first": ["stop", "lowercase"],
    "lowercase_first": ["lowercase", "stop"],
    "ignore_case_alone": [{"type": "stop", "ignore_case": True}, "lowercase"],
    "named_ignore_case": [{"type": "stop", "stopwords": "_english_", "ignore_case": True}, "lowercase"],
    "named": [{"type": "stop", "stopwords": "_english_"}, "lowercase"],
}
PATHS = ("docs/The-and-of.md", "src/a/To/b.py", "The/And/OF.md", "notes/is_it_a-test.txt")


def analysis() -> dict[str, Any]:
    filters = {}
    analyzers = {}
    for name, chain in CHAINS.items():
        steps = []
        for n, step in enumerate(chain):
            if isinstance(step, dict):
                filters[f"{name}_{n}"] = step
                step = f"{name}_{n}"
            steps.append(step)
        analyzers[name] = {"type": "custom", "tokenizer": "path_tokens", "filter": steps}
    return {"analyzer": analyzers, "tokenizer": {"path_tokens": PATH_TOKENS}, "filter": filters}


def mappings() -> dict[str, Any]:
    return {"properties": {name: {"type": "text", "analyzer": name} for name in CHAINS}}


def embedded_tokens(name: str, text: str, version: int = ANALYSIS_VERSION) -> list[str]:
    """The tokens of field ``name`` in an embedded index of analysis ``version``."""
    found = schema_of(mappings(), {"analysis": analysis(), "analysis_version": version}).fields[name].analysis
    assert found is not None
    return found.analyze(text)


# OpenSearch 3.6's and Elasticsearch's _analyze of the same definitions (alike), "docs/The-and-of.md src/a/To/b.py".
MEASURED = {
    "stop_first": ["docs", "the", "md", "src", "to", "b", "py"],
    "lowercase_first": ["docs", "md", "src", "b", "py"],
    "ignore_case_alone": ["docs", "the", "md", "src", "to", "b", "py"],
    "named_ignore_case": ["docs", "md", "src", "b", "py"],
    "named": ["docs", "the", "md", "src", "to", "b", "py"],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_stop_words_are_matched_by_case_as_on_the_clusters(name: str) -> None:
    # Before: every chain removed "The" and "To" whatever its case, as only "named_ignore_case" does.
    assert embedded_tokens(name, "docs/The-and-of.md src/a/To/b.py") == MEASURED[name]


def test_an_index_created_before_keeps_its_analysis() -> None:
    assert embedded_tokens("stop_first", "docs/The-and-of.md", version=3) == ["docs", "md"]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("paths", {"settings": {"index": {"analysis": analysis()}}, "mappings": mappings()})
    sources = {str(n): dict.fromkeys(CHAINS, path) for n, path in enumerate(PATHS)}
    assert not engine.bulk("paths", [BulkAction("index", key, source) for key, source in sources.items()]).failed
    yield engine
    engine.close()


SEARCHES: list[tuple[str, str, set[str]]] = [
    ("stop_first", "The", {"0", "2"}),  # "the" is a stop word in the query too: only "The" finds it
    ("stop_first", "the", set()),
    ("stop_first", "To", {"1"}),
    ("lowercase_first", "The", set()),
    ("named_ignore_case", "OF", set()),
    ("stop_first", "OF", {"2"}),
]


@pytest.mark.parametrize(("field", "text", "found"), SEARCHES)
def test_a_path_field_is_searched_by_the_words_the_clusters_keep(
    engine: EmbeddedEngine, field: str, text: str, found: set[str]
) -> None:
    hits = engine.search("paths", {"query": {"match": {field: text}}}).hits
    assert {hit.id for hit in hits} == found
