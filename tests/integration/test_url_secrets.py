"""A secret in an engine URL never reaches what esbridge prints. A password (``http://user:password@host``) moves into
``auth`` and is not in command output and errors, the sidecar's /readyz, its logs, the MCP tools' answers; the
host, port and path stay readable. A query string or fragment (``?token=``), which the clients never send, is
refused before anything is asked of the engine, without being printed."""

from __future__ import annotations

import logging
import uuid

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from mcp.types import CallToolResult

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.service.app import create_app
from esbridge.service.mcp_server import build_server
from tests.support.serving import free_port

SECRETS = ("tok-0f9e8d", "key-1a2b3c", "frag-4d5e6f", "pw-7b8c9d")


def with_secrets(url: str) -> str:
    return f"{url.rstrip('/')}/?token={SECRETS[0]}&api_key={SECRETS[1]}#{SECRETS[2]}"


def with_password(url: str) -> str:
    """``url`` with credentials in it: engines without security, as here, ignore them."""
    return url.replace("://", f"://esbridge:{SECRETS[3]}@", 1)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_info_refuses_a_query_string_without_printing_it(engine_settings: Settings) -> None:
    url = with_secrets(str(engine_settings.url))

    result = CliRunner().invoke(main, ["info", "--url", url])

    assert result.exit_code != 0
    assert f"url: url '{str(engine_settings.url).rstrip('/')}/?**********' has a query string" in result.output
    assert "distribution" not in result.output  # nothing was asked of the engine
    assert_no_secret(result.output)


def test_info_names_the_engine_without_the_password(engine_settings: Settings) -> None:
    result = CliRunner().invoke(main, ["info", "--url", with_password(str(engine_settings.url))])

    assert result.exit_code == 0, result.output
    assert str(engine_settings.url) in result.output
    assert_no_secret(result.output)


def test_an_engine_error_names_the_engine_without_the_password(engine_settings: Settings) -> None:
    missing = f"esbridge-test-secrets-{uuid.uuid4().hex[:8]}"
    url = with_password(str(engine_settings.url))

    result = CliRunner().invoke(main, ["search", "--url", url, "--index", missing, "tides"])

    assert result.exit_code != 0
    assert f"failed on {engine_settings.url}, index '{missing}'" in result.output
    assert_no_secret(result.output)


def test_a_dead_port_is_named_without_the_password() -> None:
    port = free_port()

    result = CliRunner().invoke(main, ["info", "--url", with_password(f"http://127.0.0.1:{port}")])

    assert result.exit_code != 0
    assert f"detect engine failed on http://127.0.0.1:{port}: cannot connect" in result.output
    assert_no_secret(result.output)


def test_readyz_and_the_logs_name_the_engine_without_the_password(
    engine_kind: str, engine_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    missing = f"esbridge-test-secrets-{uuid.uuid4().hex[:8]}"
    settings = load_settings(url=with_password(str(engine_settings.url)), engine=engine_kind, index=missing)
    assert_no_secret(f"{settings!r} {settings.redacted()}")

    with (
        caplog.at_level(logging.DEBUG),
        TestClient(create_app(settings, load_model=False), base_url="http://127.0.0.1:8088") as app,
    ):
        ready = app.get("/readyz")

    assert ready.status_code == 503
    assert str(engine_settings.url) in ready.json()["checks"]["index"]
    assert_no_secret(ready.text)
    assert_no_secret(caplog.text)


def test_the_mcp_tools_name_the_engine_without_the_password(
    engine_kind: str, engine_settings: Settings, embedder: CachedEmbedder
) -> None:
    missing = f"esbridge-test-secrets-{uuid.uuid4().hex[:8]}"
    settings = load_settings(url=with_password(str(engine_settings.url)), engine=engine_kind, index=missing)
    server = build_server(settings, embedder=embedder, load_model=False)

    async def session() -> tuple[CallToolResult, CallToolResult]:
        async with Client(server) as client:
            return await client.call_tool("index_status", {}), await client.call_tool("search", {"query": "tides"})

    status, search = anyio.run(session)

    printed = str(engine_settings.url)
    assert status.structured_content is not None
    assert status.structured_content["engine"] == printed
    assert search.is_error
    assert printed in str(search.content)
    assert_no_secret(f"{status.content}{status.structured_content}{search.content}")
