"""The analysis of esbridge's mapping gives the same tokens on both live clusters.

OpenSearch runs its own analysis-common module; the Elasticsearch that scripts/engines starts gets the
same components from scripts/engines.d/elasticsearch-analysis, and a regular Elasticsearch from its
analysis-common. BM25 on the two engines is comparable only if these agree token for token.
"""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from opensearchpy import OpenSearch

from esbridge.config import load_settings
from esbridge.engines import BulkAction, Engine
from esbridge.engines import elasticsearch as es_adapter
from esbridge.engines import opensearch as os_adapter
from esbridge.engines.analysis import analysis, analysis_probes
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.analysis import (
    ANALYSIS_VERSION,
    BUILTIN,
    UnsupportedAnalysis,
    check_options,
    field_analysis,
)
from esbridge.engines.embedded.mapping import schema_of
from esbridge.mappings.schema import render_index
from tests.integration.engines import engine_url, probe, require_live
from tests.support.data import SCIFACT, require
from tests.support.word_breaks import STANDARD_TOKENS
from tests.unit.test_embedded_stop_words import CHAINS, PATHS, SEARCHES
from tests.unit.test_embedded_stop_words import analysis as stop_analysis
from tests.unit.test_embedded_stop_words import mappings as stop_mappings

TEXTS = (
    "The running cats' tails were studied in mice (IL-6, p53).",
    "getUserName os.path.join user_name D40 PII-2024-0042 30 CFR 75.1725 HTTPServer2Go",
    "notes/Foo_bar.md C:\\Users\\x-y z",
    "Ann's analyses of beta-cells' responses in the 1990s",
)

Token = tuple[str, int, int, int, str, int]


def tokens(answer: Any) -> list[Token]:
    body = answer.body if hasattr(answer, "body") else answer
    return [
        (t["token"], t["start_offset"], t["end_offset"], t["position"], t["type"], t.get("positionLength", 1))
        for t in body["tokens"]
    ]


def test_both_clusters_analyse_the_mapping_text_alike() -> None:
    require_live("opensearch")
    require_live("elasticsearch")
    capabilities = probe("elasticsearch")
    assert not isinstance(capabilities, str)
    if not capabilities.features.get("text_analysis", True):
        # scripts/engines installs the stand-ins unless told not to; their absence otherwise is a failure
        assert os.environ.get("ESBRIDGE_ELASTICSEARCH_ANALYSIS") == "none", capabilities.notes
        pytest.skip(
            "this elasticsearch build has no analysis for esbridge's mapping (ESBRIDGE_ELASTICSEARCH_ANALYSIS=none?)"
        )
    opensearch = OpenSearch(
        **os_adapter.client_options(load_settings(url=engine_url("opensearch"), engine="opensearch"))
    )
    elastic = Elasticsearch(
        **es_adapter.client_options(load_settings(url=engine_url("elasticsearch"), engine="elasticsearch"))
    )
    try:
        for body in analysis_probes():
            for text in TEXTS:
                request = {**body, "text": text}
                expected = tokens(opensearch.indices.analyze(body=request))
                assert expected, request
                assert tokens(elastic.indices.analyze(**request)) == expected, request
        english = tokens(elastic.indices.analyze(analyzer="english", text="studies running"))
        assert [token for token, *_ in english] == ["studi", "run"], "the english analyzer stems"
    finally:
        opensearch.close()
        elastic.close()


def test_the_embedded_engine_splits_words_as_opensearch_does() -> None:
    """The embedded engine's standard analyzer against OpenSearch's, on the texts above, the unit tests' word
    breaks, and SciFact abstracts (the english analyzer differs only by its stemmer: Porter2 against Porter)."""
    require_live("opensearch")
    texts = [*TEXTS, *(text for text, _ in STANDARD_TOKENS)]
    with require(SCIFACT / "corpus.jsonl").open(encoding="utf-8") as corpus:
        texts += [json.loads(line)["text"] for line, _ in zip(corpus, range(200), strict=False)]
    opensearch = OpenSearch(
        **os_adapter.client_options(load_settings(url=engine_url("opensearch"), engine="opensearch"))
    )
    try:
        for text in texts:
            answer = opensearch.indices.analyze(body={"analyzer": "standard", "text": text})
            assert BUILTIN["standard"].analyze(text) == [token for token, *_ in tokens(answer)], text
    finally:
        opensearch.close()


IDENTIFIERS = (
    "D40 d1onysus @d1onysus#1514 utf8Decode iPhone15Pro HTTPServer2 x86_64 v1.2.3 _private __ $scope.apply",
    "café naïve ÀbcDéf αβΓδ 東京 x🚀y x²y ⅫA",
)


def test_the_embedded_engine_analyses_code_and_paths_as_opensearch_does() -> None:
    """esbridge's own analyzers (identifier parts, path segments) against OpenSearch's ``_analyze`` of the same
    definitions: digits stay with their letters (split_on_numerics false), and \\w is ASCII as in Java."""
    require_live("opensearch")
    opensearch = OpenSearch(
        **os_adapter.client_options(load_settings(url=engine_url("opensearch"), engine="opensearch"))
    )
    shared = analysis()
    try:
        for name, definition in sorted(shared["analyzer"].items()):
            embedded = field_analysis(name, shared)
            body = {
                "tokenizer": shared["tokenizer"][definition["tokenizer"]],
                "filter": [shared["filter"].get(step, step) for step in definition["filter"]],
            }
            for text in (*TEXTS, *IDENTIFIERS):
                answer = opensearch.indices.analyze(body={**body, "text": text})
                assert embedded.analyze(text) == [token for token, *_ in tokens(answer)], (name, text)
    finally:
        opensearch.close()


READ_OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {"preserve_original": True},
    {"split_on_case_change": False},
    {"split_on_numerics": False},
    {"stem_english_possessive": False},
    {"adjust_offsets": False},
    {"ignore_keywords": True},
)
UNREAD_OPTIONS: tuple[dict[str, Any], ...] = (
    {"catenate_words": True},
    {"catenate_numbers": True},
    {"catenate_all": True},
    {"generate_word_parts": False},
    {"generate_number_parts": False},
    {"protected_words": ["getUserName"]},
    {"type_table": ["- => ALPHA"]},
)
PARTS_TEXT = "getUserName os.path.join user_name D40 PII-2024-0042 HTTPServer2Go Wi-Fi 500-42 Ann's"


@pytest.mark.parametrize("kind", ["word_delimiter", "word_delimiter_graph"])
def test_word_delimiter_options_give_opensearchs_tokens_or_are_refused(kind: str) -> None:
    """Each option the embedded engine reads gives OpenSearch's tokens; each it does not read changes OpenSearch's
    tokens, so an index naming it is refused at creation (tests/unit/test_embedded_analysis_options.py)."""
    require_live("opensearch")
    opensearch = OpenSearch(
        **os_adapter.client_options(load_settings(url=engine_url("opensearch"), engine="opensearch"))
    )

    def cluster(options: dict[str, Any]) -> list[str]:
        body = {"tokenizer": "whitespace", "filter": [{"type": kind, **options}], "text": PARTS_TEXT}
        return [token for token, *_ in tokens(opensearch.indices.analyze(body=body))]

    def embedded(options: dict[str, Any]) -> list[str]:
        analysis = {
            "analyzer": {"parts": {"type": "custom", "tokenizer": "whitespace", "filter": ["f"]}},
            "filter": {"f": {"type": kind, **options}},
        }
        check_options("parts", analysis)
        return field_analysis("parts", analysis).analyze(PARTS_TEXT)

    try:
        for options in READ_OPTIONS:
            assert embedded(options) == cluster(options), options
        plain = cluster({})
        for options in UNREAD_OPTIONS:
            assert cluster(options) != plain, options
            with pytest.raises(UnsupportedAnalysis, match=f"option '{next(iter(options))}'"):
                embedded(options)
    finally:
        opensearch.close()


def _analyze(kind: str, index: str, body: dict[str, Any]) -> Any:
    url = engine_url(kind)
    assert url is not None
    request = urllib.request.Request(
        f"{url.rstrip('/')}/{index}/_analyze", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def _with_stop_chains(body: dict[str, Any]) -> dict[str, Any]:
    """esbridge's index ``body`` with the path chains of ``stop_analysis`` beside its own analyzers."""
    own = body["settings"]["index"]["analysis"]
    body["settings"]["index"]["analysis"] = {
        key: {**own.get(key, {}), **stop_analysis()[key]} for key in ("analyzer", "tokenizer", "filter")
    }
    body["mappings"]["properties"].update(stop_mappings()["properties"])
    return body


def test_path_fields_and_their_stop_words_give_opensearchs_tokens_and_matches(engine: Engine, tmp_path: Path) -> None:
    """esbridge's path field, and path chains with a ``stop`` filter before or after ``lowercase``: the embedded
    engine's tokens against the cluster's ``_analyze`` of the index's own fields, and the same ``match`` answers."""
    name = f"h119-paths-{uuid.uuid4().hex[:8]}"
    embedded = EmbeddedEngine(tmp_path / "data")
    try:
        for each in (engine, embedded):
            body = _with_stop_chains(render_index(engine.dialect if each is engine else "opensearch"))
            each.create_index(name, body)
            docs = [BulkAction("index", str(n), {"path": p, **dict.fromkeys(CHAINS, p)}) for n, p in enumerate(PATHS)]
            assert not each.bulk(name, docs).failed
            each.refresh(name)
        merged = body["settings"]["index"]["analysis"]
        schema = schema_of(body["mappings"], {"analysis": merged, "analysis_version": ANALYSIS_VERSION})
        for field in ("path.text", *CHAINS):
            analysis = schema.fields[field].analysis
            assert analysis is not None
            for text in (*PATHS, "docs/the-and-of.md", "src/a/to/b.py"):
                answer = _analyze(engine.dialect, name, {"field": field, "text": text})
                assert analysis.analyze(text) == [token["token"] for token in answer["tokens"]], (field, text)
                query = {"query": {"match": {field: text.split("/")[-1]}}}
                assert {h.id for h in embedded.search(name, query).hits} == {
                    h.id for h in engine.search(name, query).hits
                }
        for field, text, found in SEARCHES:
            query = {"query": {"match": {field: text}}}
            assert {h.id for h in embedded.search(name, query).hits} == {h.id for h in engine.search(name, query).hits}
            assert {h.id for h in engine.search(name, query).hits} == found, (field, text)
    finally:
        for each in (engine, embedded):
            each.delete_index(name, missing_ok=True)
        embedded.close()
