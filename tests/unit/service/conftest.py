from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.types import CallToolResult

from esbridge.config import Settings, load_settings
from esbridge.embeddings.base import Embedder
from esbridge.service.app import create_app
from esbridge.service.mcp_server import build_server
from tests.support.hashing import HashingEmbedder

KEY = "test-key-0123456789"
OTHER_KEY = "second-key-9876543210"

RECORDS: list[dict[str, Any]] = [
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
     "tags": ["energy"]},
    {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate power.", "tags": ["energy"]},
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough."},
]  # fmt: skip

ClientFactory = Callable[..., TestClient]


def service_settings(**service: Any) -> Settings:
    """Embedded engine (in the test's temporary data dir), index ``notes``, the given service settings."""
    return load_settings(index="notes", service=service)


@pytest.fixture
def make_client() -> Iterator[ClientFactory]:
    """Start an app in-process (lifespan included) with the given service settings; closed after the test."""
    clients: list[TestClient] = []

    def make(
        settings: Settings | None = None, embedder: Embedder | None = None, *, model: bool = True, **service: Any
    ) -> TestClient:
        if model and embedder is None:
            embedder = HashingEmbedder()
        app = create_app(settings or service_settings(**service), embedder=embedder, load_model=False)
        # A loopback host, as a caller on this machine names: the service refuses others where reads need no key.
        client = TestClient(app, base_url="http://127.0.0.1:8088", raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: ClientFactory) -> TestClient:
    """Keys configured, the three records written."""
    client = make_client(api_keys=[KEY, OTHER_KEY])
    answer = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert answer.status_code == 200, answer.text
    return client


def call_tool(
    name: str, arguments: dict[str, Any], settings: Settings | None = None, embedder: Embedder | None = None
) -> CallToolResult:
    """One call of an MCP tool through the SDK's in-process client, on a server with ``settings`` (default:
    ``service_settings()``) and ``embedder`` (default: hashing-32)."""
    server = build_server(settings or service_settings(), embedder=embedder or HashingEmbedder(), load_model=False)

    async def session() -> CallToolResult:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(session)


def tool_text(result: CallToolResult) -> str:
    """The text of a tool answer's first block (a tool error's message)."""
    block = result.content[0]
    assert block.type == "text"
    return block.text


def fields(answer: Any) -> list[str]:
    """The fields a 422 answer names."""
    return [item["field"] for item in answer.json()["error"]["fields"]]


class SlowEmbedder(HashingEmbedder):
    """Answers after ``delay_s``: a model slower than the request timeout."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(self.delay_s)
        return super().embed(texts)
