"""The foundation against live engines: probe, index lifecycle, BM25 and kNN, errors."""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.engines import BulkAction, Engine, connect, connect_async, resolve_kind
from esbridge.engines.dialect import index_settings, knn_body, match_body, vector_field
from esbridge.errors import (
    AuthenticationError,
    EngineResponseError,
    EngineUnavailable,
    IndexAlreadyExists,
    IndexNotFound,
    RequestRejected,
)
from tests.support.loopback import ForwardingProxy, requiring_basic_auth

DOCS: dict[str, dict[str, Any]] = {
    "fox": {
        "title": "The quick brown fox",
        "body": "A fox jumps over the lazy dog.",
        "tag": "animals",
        "vector": [0.9, 0.1, 0.0],
    },
    "stars": {
        "title": "Stars and galaxies",
        "body": "Telescopes observe distant galaxies.",
        "tag": "space",
        "vector": [0.0, 0.2, 0.95],
    },
    "sourdough": {
        "title": "Baking sourdough bread",
        "body": "Flour, water, salt and a starter.",
        "tag": "food",
        "vector": [0.1, 0.95, 0.1],
    },
}


def create_test_index(engine: Engine, index: str) -> None:
    engine.create_index(
        index,
        {
            "settings": index_settings(engine.dialect),
            "mappings": {
                "properties": {
                    "title": {"type": "text"},
                    "body": {"type": "text"},
                    "tag": {"type": "keyword"},
                    "vector": vector_field(engine.dialect, 3),
                }
            },
        },
    )


def load_docs(engine: Engine, index: str) -> None:
    create_test_index(engine, index)
    result = engine.bulk(index, [BulkAction("index", doc_id, doc) for doc_id, doc in DOCS.items()])
    assert list(result.failed) == []
    assert sorted(result.succeeded) == sorted(DOCS)
    engine.refresh(index)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_probe_reports_distribution_version_and_vector_search(engine: Engine, engine_kind: str) -> None:
    capabilities = engine.probe()
    assert capabilities.distribution == engine_kind
    assert capabilities.version[0].isdigit()
    assert capabilities.knn is True
    assert capabilities.health in ("green", "yellow")
    assert capabilities.native_hybrid, "the probe must report native hybrid features, on or off"
    assert all(isinstance(value, bool) for value in capabilities.native_hybrid.values())
    if engine_kind == "opensearch":
        assert "opensearch-knn" in capabilities.plugins


def test_auto_detection_finds_the_engine_kind(engine_settings: Settings, engine_kind: str) -> None:
    assert resolve_kind(engine_settings.model_copy(update={"engine": "auto"})) == engine_kind


def test_info_json_on_the_command_line(engine_settings: Settings, engine_kind: str) -> None:
    args = ["info", "--json", "--url", engine_settings.url or ""]
    env = {}
    if engine_settings.auth.username:
        env["ESBRIDGE_AUTH__USERNAME"] = engine_settings.auth.username
        env["ESBRIDGE_AUTH__PASSWORD"] = (
            engine_settings.auth.password.get_secret_value() if engine_settings.auth.password else ""
        )
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["distribution"] == engine_kind
    assert data["knn"] is True
    assert isinstance(data["version"], str)
    assert isinstance(data["native_hybrid"], dict) and data["native_hybrid"]

    readable = CliRunner().invoke(main, ["info", "--url", engine_settings.url or ""], env=env)
    assert readable.exit_code == 0, readable.output
    assert f"{engine_kind} {data['version']}" in readable.output
    assert re.search(r"^Vector search +yes$", readable.output, re.MULTILINE)


def test_create_and_delete_an_index_with_vector_and_text_fields(engine: Engine, index_name: str) -> None:
    assert not engine.index_exists(index_name)
    create_test_index(engine, index_name)
    assert engine.index_exists(index_name)

    with pytest.raises(IndexAlreadyExists, match=index_name):
        create_test_index(engine, index_name)

    assert engine.delete_index(index_name) is True
    assert not engine.index_exists(index_name)
    assert engine.delete_index(index_name, missing_ok=True) is False
    with pytest.raises(IndexNotFound, match=index_name):
        engine.delete_index(index_name)


def test_three_documents_are_found_by_bm25_and_by_knn(engine: Engine, index_name: str) -> None:
    load_docs(engine, index_name)

    lexical = engine.search(index_name, match_body("sourdough bread", ["title^2", "body"], size=3))
    assert lexical.hits[0].id == "sourdough"
    assert lexical.hits[0].source["title"] == "Baking sourdough bread"

    semantic = engine.search(index_name, knn_body(engine.dialect, "vector", [0.0, 0.1, 1.0], k=3, num_candidates=10))
    assert semantic.hits[0].id == "stars"
    assert len(semantic.hits) == 3
    assert semantic.hits[0].score >= semantic.hits[1].score >= semantic.hits[2].score

    # A filter applied inside the kNN search still fills the result from the matching documents.
    filtered = engine.search(
        index_name,
        knn_body(
            engine.dialect, "vector", [0.0, 0.1, 1.0], k=3, num_candidates=10, filters=[{"term": {"tag": "food"}}]
        ),
    )
    assert [hit.id for hit in filtered.hits] == ["sourdough"]


def test_msearch_runs_both_retrievers_in_one_round_trip(engine: Engine, index_name: str) -> None:
    load_docs(engine, index_name)
    lexical, semantic = engine.msearch(
        index_name,
        [match_body("galaxies", ["title", "body"], size=3), knn_body(engine.dialect, "vector", [1.0, 0.0, 0.0], k=2)],
    )
    assert not isinstance(lexical, Exception) and not isinstance(semantic, Exception)
    assert lexical.hits[0].id == "stars"
    assert semantic.hits[0].id == "fox"


async def test_async_search_matches_sync(engine_settings: Settings, engine: Engine, index_name: str) -> None:
    load_docs(engine, index_name)
    adapter = connect_async(engine_settings)
    try:
        result = await adapter.search(index_name, match_body("fox", ["title", "body"], size=3))
    finally:
        await adapter.close()
    assert [hit.id for hit in result.hits] == ["fox"]


async def test_async_errors_carry_the_engines_reason(
    engine_settings: Settings, engine: Engine, index_name: str
) -> None:
    create_test_index(engine, index_name)
    adapter = connect_async(engine_settings)
    try:
        with pytest.raises(IndexNotFound, match="esbridge-test-missing"):
            await adapter.search("esbridge-test-missing", {"query": {"match_all": {}}})
        with pytest.raises(RequestRejected) as rejected:
            await adapter.search(index_name, {"query": {"no_such_query": {}}})
    finally:
        await adapter.close()
    assert "no_such_query" in str(rejected.value)
    assert "no details in the response" not in str(rejected.value)


def test_bulk_reports_the_bad_document_and_keeps_the_rest(engine: Engine, index_name: str) -> None:
    create_test_index(engine, index_name)
    actions = [
        BulkAction("index", "good-1", {"title": "fine", "vector": [0.1, 0.2, 0.3]}),
        BulkAction("index", "bad", {"title": "wrong dimension", "vector": [0.1, 0.2]}),
        BulkAction("index", "good-2", {"title": "also fine", "vector": [0.3, 0.2, 0.1]}),
    ]
    result = engine.bulk(index_name, actions)
    assert sorted(result.succeeded) == ["good-1", "good-2"]
    assert [(failure.id, failure.status) for failure in result.failed] == [("bad", 400)]
    assert "vector" in result.failed[0].reason
    engine.refresh(index_name)
    assert engine.search(index_name, {"query": {"match_all": {}}}).total == 2


def test_search_on_a_missing_index_is_index_not_found(engine: Engine) -> None:
    with pytest.raises(IndexNotFound, match="esbridge-test-missing"):
        engine.search("esbridge-test-missing", {"query": {"match_all": {}}})


def test_a_malformed_query_is_rejected_with_the_engines_reason(engine: Engine, index_name: str) -> None:
    create_test_index(engine, index_name)
    with pytest.raises(RequestRejected, match="search failed on"):
        engine.search(index_name, {"query": {"no_such_query": {}}})


def test_wrong_url_gives_an_error_naming_the_url(engine_kind: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    adapter = connect(load_settings(url=url, engine=engine_kind, retries=0, timeout_s=2))
    with pytest.raises(EngineUnavailable, match=url.replace(".", r"\.")):
        adapter.probe()
    adapter.close()

    result = CliRunner().invoke(main, ["info", "--url", url])
    assert result.exit_code == 1
    assert url in result.output
    assert "Traceback" not in result.output


def upstream_url(engine_settings: Settings) -> str:
    """The engine's URL with its credentials in it, for a proxy that forwards to it."""
    assert engine_settings.url is not None
    if not engine_settings.auth.username:
        return engine_settings.url
    password = engine_settings.auth.password.get_secret_value() if engine_settings.auth.password else ""
    return engine_settings.url.replace("://", f"://{engine_settings.auth.username}:{password}@", 1)


@pytest.mark.parametrize("right_password", ["right-password", "pässwört-€"])
def test_wrong_credentials_give_an_authentication_error(
    engine_settings: Settings, engine_kind: str, right_password: str
) -> None:
    # Sent in UTF-8 as the security layers decode it: the OpenSearch client once encoded it as Latin-1 ("€" a bare
    # UnicodeEncodeError, "ä" other bytes).
    guard = requiring_basic_auth("esbridge", right_password, flavour=engine_kind)
    with ForwardingProxy(upstream_url(engine_settings), guard).running() as proxy:
        right = connect(
            load_settings(url=proxy.url, engine=engine_kind, auth={"username": "esbridge", "password": right_password})
        )
        assert right.probe().distribution == engine_kind
        right.close()

        wrong = connect(
            load_settings(
                url=proxy.url,
                engine=engine_kind,
                retries=0,
                auth={"username": "esbridge", "password": "wrong-password"},
            )
        )
        with pytest.raises(AuthenticationError) as caught:
            wrong.probe()
        wrong.close()
    assert proxy.url in str(caught.value)
    assert "wrong-password" not in str(caught.value)


async def test_the_async_adapters_send_basic_auth_the_engine_checks_and_log_no_secret(
    engine_settings: Settings, engine_kind: str, engine: Engine, index_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    # With warnings as errors: opensearch-py's async client once gave aiohttp a BasicAuth, which aiohttp deprecates.
    load_docs(engine, index_name)
    guard = requiring_basic_auth("esbridge", "right-password", flavour=engine_kind)
    with ForwardingProxy(upstream_url(engine_settings), guard).running() as proxy, caplog.at_level(logging.DEBUG):
        right = connect_async(
            load_settings(
                url=proxy.url, engine=engine_kind, auth={"username": "esbridge", "password": "right-password"}
            )
        )
        try:
            found = await right.search(index_name, match_body("fox", ["title", "body"], size=3))
        finally:
            await right.close()
        wrong = connect_async(
            load_settings(
                url=proxy.url,
                engine=engine_kind,
                retries=0,
                auth={"username": "esbridge", "password": "wrong-password"},
            )
        )
        try:
            with pytest.raises(AuthenticationError) as caught:
                await wrong.search(index_name, {"query": {"match_all": {}}})
        finally:
            await wrong.close()

    assert [hit.id for hit in found.hits] == ["fox"]
    assert (proxy.forwarded, proxy.intercepted) == (1, 1)
    assert proxy.url in str(caught.value)
    for secret in ("right-password", "wrong-password", base64.b64encode(b"esbridge:right-password").decode()):
        assert secret not in caplog.text + str(caught.value)


def test_the_other_engine_kind_says_which_server_answered_and_how_to_select_it(
    engine_settings: Settings, engine_kind: str
) -> None:
    # The OpenSearch adapter once showed Elasticsearch's raw "HTTP 405: Incorrect HTTP method for uri [/]".
    other = "opensearch" if engine_kind == "elasticsearch" else "elasticsearch"
    wrong = connect(engine_settings.model_copy(update={"engine": other, "retries": 0}))
    try:
        with pytest.raises(EngineResponseError) as caught:
            wrong.probe()
    finally:
        wrong.close()
    assert f"engine = '{engine_kind}'" in str(caught.value)


async def test_a_search_through_the_elasticsearch_adapter_at_opensearch_says_which_server_answered(
    engine_settings: Settings, engine_kind: str, engine: Engine, index_name: str
) -> None:
    # A search does not probe: OpenSearch's HTTP 406 for Elasticsearch's media type was all the error said.
    if engine_kind != "opensearch":
        pytest.skip("the OpenSearch adapter at Elasticsearch is refused by its probe (the test above)")
    create_test_index(engine, index_name)
    settings = engine_settings.model_copy(update={"engine": "elasticsearch", "retries": 0})
    wrong = connect(settings)
    try:
        with pytest.raises(EngineResponseError, match=r"does not identify as Elasticsearch.*engine = 'opensearch'"):
            wrong.search(index_name, {"query": {"match_all": {}}})
    finally:
        wrong.close()
    wrong_async = connect_async(settings, "elasticsearch")
    try:
        with pytest.raises(EngineResponseError, match=r"does not identify as Elasticsearch.*engine = 'opensearch'"):
            await wrong_async.search(index_name, {"query": {"match_all": {}}})
    finally:
        await wrong_async.close()
