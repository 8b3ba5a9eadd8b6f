"""Counts, exports, status and graph reads of an index that lacks a shard, on the live engines.

An index of two shards that may hold at most one shard per node has, on a single node, one shard that can be
allocated nowhere: the index is red, and every read of it answers from the other shard only. Every index made
here is deleted in a ``finally`` as soon as its test ends, so the engines are red no longer than that.
"""

from __future__ import annotations

import io
import json
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from esbridge import errors
from esbridge.cli import main
from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.blocks import write_blocked
from esbridge.ingest.transfer import export_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.concepts import build_concept_index, concept_index_name, frequent_terms
from esbridge.query.models import SearchRequest
from esbridge.service.app import create_app
from esbridge.service.backend import Backend
from tests.integration.engines import load_records
from tests.integration.test_partial_shards import create_stranded_index
from tests.integration.test_search import RECORDS, search

DIMENSION = 4


@pytest.fixture
def alias(engine: Engine) -> Iterator[str]:
    name = f"partial-{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        for info in engine.list_indices(f"{name}*"):
            engine.delete_index(info.name, missing_ok=True)


def _http(url: str, method: str, body: object, *, ndjson: bool = False) -> Any:
    data = "".join(json.dumps(line) + "\n" for line in cast(list[Any], body)) if ndjson else json.dumps(body)
    request = urllib.request.Request(
        url,
        data=data.encode(),
        method=method,
        headers={"content-type": "application/x-ndjson" if ndjson else "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def create_half_stranded(url: str, name: str, body: Mapping[str, Any], chunk_ids: list[str] = []) -> int:  # noqa: B006
    """Create ``name`` with ``body`` but two shards, one of which cannot be allocated; write ``chunk_ids``
    (those routed to the missing shard fail after a second); return how many were written."""
    wanted: dict[str, Any] = json.loads(json.dumps(body))
    wanted["settings"]["index"].update(number_of_shards=2, routing={"allocation": {"total_shards_per_node": 1}})
    assert _http(f"{url}/{name}?wait_for_active_shards=0", "PUT", wanted)["acknowledged"]
    if not chunk_ids:
        return 0
    lines: list[dict[str, Any]] = []
    for chunk_id in chunk_ids:
        lines += [{"index": {"_index": name, "_id": chunk_id}}, {"chunk_id": chunk_id, "doc_id": chunk_id}]
    answer = _http(f"{url}/_bulk?timeout=1s&refresh=true", "POST", lines, ndjson=True)
    written = sum(1 for item in answer["items"] if item["index"]["status"] == 201)
    assert 0 < written < len(chunk_ids), answer  # some on the shard that answers, some on the missing one
    return written


@contextmanager
def deleted_afterwards(engine: Engine, *names: str) -> Iterator[None]:
    try:
        yield
    finally:
        for name in names:
            engine.delete_index(name, missing_ok=True)


def manager(engine: Engine, alias: str) -> IndexManager:
    return IndexManager(engine, alias, IndexParameters(dimension=DIMENSION))


def test_a_count_that_misses_shards_fails_instead_of_counting_part_of_the_index(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    name = f"{alias}-v1"
    with deleted_afterwards(engine, name):
        create_half_stranded(str(engine_settings.url), name, manager(engine, alias).wanted_body(), ["a", "b", "c", "d"])
        with pytest.raises(errors.IndexUnavailable) as raised:
            engine.count(name)
    assert "1 of 2 shards did not answer" in str(raised.value)
    assert f"index {name!r}" in str(raised.value)


class NewVersionLosesAShard:
    """The live engine, except that the version a reindex creates has a shard that no node holds, as when
    the node holding it dies right after the copy."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self._stranded: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        create_half_stranded(self._url, index, body)
        self._stranded = index

    def refresh(self, index: str) -> None:
        # Refreshing a shard that has never been allocated waits for it until the request times out; the copy
        # of an empty version wrote nothing to refresh.
        if index != self._stranded:
            self._engine.refresh(index)


def test_a_reindex_whose_copy_cannot_be_counted_whole_leaves_the_alias_and_says_what_to_do(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    """Both versions count 0 here, the old one whole and the new one from the shard that answers: the counts
    agree, and the alias must still not move to a version that may lack documents."""
    old = manager(engine, alias).create()
    new = f"{alias}-v2"
    losing = cast(Engine, NewVersionLosesAShard(engine, str(engine_settings.url)))
    with deleted_afterwards(engine, new), pytest.raises(errors.IndexUnavailable) as raised:
        manager(losing, alias).reindex()
    assert engine.alias_targets(alias) == [old]
    assert not engine.index_exists(new)
    assert not write_blocked(engine.get_index_settings(old))
    message = str(raised.value)
    assert "1 of 2 shards did not answer" in message
    assert f"the alias stays on {old}" in message
    assert "run `esbridge index reindex` again" in message


def test_an_export_of_an_index_that_lacks_a_shard_writes_nothing(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    name = f"{alias}-v1"
    with deleted_afterwards(engine, name):
        create_half_stranded(str(engine_settings.url), name, manager(engine, alias).wanted_body(), ["a", "b", "c", "d"])
        engine.update_aliases([{"add": {"index": name, "alias": alias, "is_write_index": True}}])
        out = io.StringIO()
        with pytest.raises(errors.IndexUnavailable) as raised:
            export_chunks(engine, manager(engine, alias), out)
    assert "1 of 2 shards did not answer" in str(raised.value)
    assert out.getvalue() == ""  # not even a header whose chunk count is part of the index's


def test_index_status_reports_a_count_that_lacks_shards_as_partial(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    name = f"{alias}-v1"
    with deleted_afterwards(engine, name):
        written = create_half_stranded(
            str(engine_settings.url), name, manager(engine, alias).wanted_body(), ["a", "b", "c", "d", "e", "f"]
        )
        engine.update_aliases([{"add": {"index": name, "alias": alias, "is_write_index": True}}])
        status = Backend(engine_settings.model_copy(update={"index": alias}), None).index_status(engine)
    assert status.chunks == written
    assert status.partial is True
    assert any("1 of 2 shards did not answer" in warning for warning in status.warnings), status


def test_index_status_of_a_whole_index_is_not_partial(engine: Engine, engine_settings: Settings, alias: str) -> None:
    manager(engine, alias).create()
    status = Backend(engine_settings.model_copy(update={"index": alias}), None).index_status(engine)
    assert status.chunks == 0
    assert status.partial is False
    assert "warnings" not in status.model_dump(mode="json")


def test_index_list_says_which_versions_lack_shards_in_their_chunk_counts(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    name = f"{alias}-v1"
    base = ["index", "list", "--url", str(engine_settings.url), "--index", alias]
    with deleted_afterwards(engine, name):
        written = create_half_stranded(
            str(engine_settings.url), name, manager(engine, alias).wanted_body(), ["a", "b", "c", "d", "e", "f"]
        )
        engine.update_aliases([{"add": {"index": name, "alias": alias, "is_write_index": True}}])
        listed = CliRunner().invoke(main, base)
        as_json = CliRunner().invoke(main, [*base, "--json"])
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if name in line)
    assert (row.split()[2], row.split()[-1]) == (str(written), "red"), listed.output
    assert "red: some shards have no active copy" in listed.output
    assert json.loads(as_json.output)["versions"][0]["health"] == "red"


def test_graph_expansion_over_an_index_that_lacks_shards_says_its_links_are_partial(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    stranded = f"{alias}-stranded"
    with deleted_afterwards(engine, stranded):
        create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
        engine.update_aliases([{"add": {"index": stranded, "alias": alias}}])
        for mode in ("expand", "rescore"):
            response = search(
                engine_settings,
                alias,
                embedder,
                SearchRequest(query="solar electricity", graph=True),
                graph={"mode": mode},
            )
            graph = [warning for warning in response.warnings if warning.startswith("graph")]
            assert any("1 of 2 shards did not answer" in warning for warning in graph), (mode, response.warnings)


def test_concept_expansion_from_a_vocabulary_that_lacks_shards_says_so(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    terms = frequent_terms([str(record.get("text", "")) for record in RECORDS], limit=50, min_documents=1)
    whole, stranded = concept_index_name(f"{alias}-whole"), f"{alias}-stranded"
    with deleted_afterwards(engine, whole, stranded):
        build_concept_index(engine, f"{alias}-whole", terms, embedder)
        create_stranded_index(engine, str(engine_settings.url), alias, stranded, embedder.dimension)
        engine.update_aliases(
            [{"add": {"index": name, "alias": concept_index_name(alias)}} for name in (whole, stranded)]
        )
        response = search(
            engine_settings, alias, embedder, SearchRequest(query="photovoltaic"), concepts={"enabled": True}
        )
    assert response.details.concept_terms, response.warnings  # what the whole shard holds still expands
    assert any(
        warning.startswith("concept expansion: partial results: 1 of 2 shards did not answer")
        for warning in response.warnings
    ), response.warnings


def test_readiness_stays_ready_and_warns_when_the_index_lacks_shards(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder
) -> None:
    """Searches still answer, flagged partial, so the sidecar stays in service; its readiness says why answers
    may lack documents."""
    name = f"{alias}-v1"
    settings = engine_settings.model_copy(update={"index": alias})
    with deleted_afterwards(engine, name):
        body = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension)).wanted_body()
        create_half_stranded(str(engine_settings.url), name, body, ["a", "b", "c", "d"])
        engine.update_aliases([{"add": {"index": name, "alias": alias, "is_write_index": True}}])
        with TestClient(
            create_app(settings, embedder=embedder, load_model=False), base_url="http://127.0.0.1:8088"
        ) as client:
            ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    assert ready.json()["checks"] == {"engine": "ok", "index": "ok", "model": "ok"}
    assert any("1 of 2 shards did not answer" in warning for warning in ready.json()["warnings"]), ready.json()
