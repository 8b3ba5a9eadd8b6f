"""Searches that some or all shards cannot answer, on the live engines.

A shard with no active copy is made without stopping a node: an index whose shards may only be allocated to
a node that does not exist stays red. Behind the same alias as a healthy index it leaves part of the answer
missing (a partial result); alone behind an alias it leaves no shard to answer (a red index).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS, search


def create_stranded_index(engine: Engine, url: str, alias: str, name: str, dimension: int) -> None:
    """An index with esbridge's mapping whose one shard can be allocated nowhere (red from birth). It records the
    model ``alias``'s index records, if there is one: a search reads an alias over both only when they record one.

    Created over plain HTTP with ``wait_for_active_shards=0``: the adapter's create waits for a shard that
    never comes."""
    body: dict[str, Any] = IndexManager(engine, alias, IndexParameters(dimension=dimension)).wanted_body()
    if engine.index_exists(alias):
        recorded = engine.get_mapping(alias).get("_meta") or {}
        body["mappings"]["_meta"] = {**body["mappings"].get("_meta", {}), **recorded}
    body["settings"]["index"]["routing"] = {"allocation": {"require": {"_name": "no-such-node"}}}
    request = urllib.request.Request(
        f"{url}/{name}?wait_for_active_shards=0",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer)["acknowledged"]


def test_a_search_that_misses_shards_says_so_and_flags_the_answer(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    stranded = f"{alias}-stranded"
    create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
    engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])

    for mode in ("concurrent", "msearch"):
        response = search(engine_settings, alias, embedder, SearchRequest(query="solar electricity"), execution=mode)
        assert response.partial, mode
        assert response.search_mode == "hybrid"
        partial = [warning for warning in response.warnings if "partial results" in warning]
        assert {warning.split(":")[0] for warning in partial} == {"bm25", "knn"}, response.warnings
        assert all("1 of 2 shards did not answer" in warning for warning in partial), partial
        assert "solar" in {hit.doc_id for hit in response.results}  # what the healthy shard holds still answers


def test_a_whole_answer_is_not_flagged(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    response = search(engine_settings, alias, embedder, SearchRequest(query="solar electricity"))
    assert not response.partial
    assert not [warning for warning in response.warnings if "partial" in warning]


def test_a_red_index_fails_the_search_with_an_error_naming_it(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder
) -> None:
    stranded = f"{alias}-red"
    create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
    engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])
    with pytest.raises(errors.IndexUnavailable) as raised:
        search(engine_settings, alias, embedder, SearchRequest(query="solar electricity"))
    assert f"index {alias!r}" in str(raised.value)
    assert "the index is red" in str(raised.value)


def test_a_scan_that_misses_shards_fails_instead_of_yielding_part_of_the_index(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """Export, the client-side reindex copy, graph statistics and ingest's change detection read every
    document with ``scan``; one that silently lacked a shard's documents would export, copy or count part."""
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    stranded = f"{alias}-stranded"
    create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
    engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])

    with pytest.raises(errors.IndexUnavailable) as raised:
        list(engine.scan(alias, {"match_all": {}}, ["chunk_id"], sort_field="chunk_id"))
    assert "1 of 2 shards did not answer" in str(raised.value)
    assert f"index {alias!r}" in str(raised.value)
