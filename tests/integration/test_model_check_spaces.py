"""A search of an alias over indices whose vector fields are in different spaces (cosine beside l2), on both
engines: each engine answers one kNN request over them, each index scoring in its own space, so the hits would
interleave by scores that do not compare. esbridge refuses it before any engine query, through the CLI, the
sidecar (409 alias_ambiguous) and MCP, naming each index and its space."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.service.app import create_app
from esbridge.service.mcp_server import build_server
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS

L2 = {"opensearch": "l2", "elasticsearch": "l2_norm"}
COSINE = {"opensearch": "cosinesimil", "elasticsearch": "cosine"}


@pytest.fixture
def spaced(engine_kind: str, engine: Engine, embedder: CachedEmbedder, tmp_path: Path) -> Iterator[str]:
    """An alias over ``<alias>-v1`` (esbridge's mapping, cosine) and ``<alias>-l2``: the same mapping and model
    record but for the vector field's space, holding the same records."""
    alias = f"h138-spaces-{uuid.uuid4().hex[:8]}"
    try:
        load_records(engine, alias, embedder, tmp_path, RECORDS)
        body: dict[str, Any] = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension)).wanted_body()
        vector = body["mappings"]["properties"]["vector"]
        if engine_kind == "opensearch":
            vector["method"]["space_type"] = L2[engine_kind]
        else:
            vector["similarity"] = L2[engine_kind]
        body["mappings"]["_meta"] = engine.get_mapping(f"{alias}-v1")["_meta"]
        engine.create_index(f"{alias}-l2", body)
        # Copied by hand, as a build may lack _reindex; Elasticsearch leaves vectors out of _source unless asked.
        copy: dict[str, Any] = {"size": 100, "query": {"match_all": {}}}
        if engine_kind == "elasticsearch":
            copy["_source"] = {"exclude_vectors": False}
        held = engine.search(f"{alias}-v1", copy).hits
        engine.bulk(f"{alias}-l2", [BulkAction("index", hit.id, dict(hit.source)) for hit in held])
        engine.refresh(f"{alias}-l2")
        engine.update_aliases([{"add": {"index": f"{alias}-l2", "alias": alias}}])
        yield alias
    finally:
        for index in (f"{alias}-v1", f"{alias}-l2"):
            engine.delete_index(index, missing_ok=True)


def _refusal(engine_kind: str, alias: str) -> str:
    return (
        f"alias {alias!r} points to several indices whose vector field vector is not of one space "
        f"({alias}-l2: {L2[engine_kind]}; {alias}-v1: {COSINE[engine_kind]})"
    )


def test_the_engine_itself_answers_with_scores_of_both_spaces(engine_kind: str, engine: Engine, spaced: str) -> None:
    stored = engine.search(f"{spaced}-v1", {"size": 1, "_source": ["vector"], "query": {"exists": {"field": "vector"}}})
    query = stored.hits[0].source["vector"]
    if engine_kind == "opensearch":
        body = {"size": 20, "query": {"knn": {"vector": {"vector": query, "k": 20}}}}
    else:
        body = {"size": 20, "knn": {"field": "vector", "query_vector": query, "k": 20, "num_candidates": 20}}
    scores: dict[str, list[float]] = {}
    for hit in engine.search(spaced, body).hits:
        scores.setdefault(hit.id, []).append(hit.score)
    # No refusal: a chunk found in both indices has a score of each space, cosine's above l2's.
    assert any(len(pair) == 2 and abs(pair[0] - pair[1]) > 0.05 for pair in scores.values()), scores


def test_the_sidecar_refuses_the_search_naming_each_space(
    engine_kind: str, engine_settings: Settings, embedder: CachedEmbedder, spaced: str
) -> None:
    settings = load_settings(url=str(engine_settings.url), engine=engine_kind, index=spaced)
    with TestClient(
        create_app(settings, embedder=embedder, load_model=False),
        base_url="http://127.0.0.1:8088",
        raise_server_exceptions=False,
    ) as app:
        found = app.post("/v1/search", json={"query": "solar electricity"})
    assert found.status_code == 409, found.text
    error = found.json()["error"]
    assert error["kind"] == "alias_ambiguous"
    assert _refusal(engine_kind, spaced) in error["message"], error["message"]


def test_the_cli_and_mcp_refuse_the_search_naming_each_space(
    engine_kind: str, engine_settings: Settings, embedder: CachedEmbedder, spaced: str
) -> None:
    url = str(engine_settings.url)
    refused = CliRunner().invoke(main, ["search", "solar", "--url", url, "--engine", engine_kind, "--index", spaced])
    assert refused.exit_code != 0
    assert _refusal(engine_kind, spaced) in " ".join(refused.output.split()), refused.output

    server = build_server(load_settings(url=url, engine=engine_kind, index=spaced), embedder=embedder, load_model=False)

    async def search() -> Any:
        async with Client(server) as client:
            return await client.call_tool("search", {"query": "solar"})

    answer = anyio.run(search)
    assert answer.is_error
    assert _refusal(engine_kind, spaced) in " ".join(str(answer.content).split()), answer.content
