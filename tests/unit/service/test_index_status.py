"""``index_status`` as a typed model: the MCP tool lists its output schema and answers the same JSON keys as
before, and ``Backend.index_status`` returns ``IndexStatus`` on the embedded engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from esbridge.config import Settings, load_settings
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.service.backend import Backend
from esbridge.service.mcp_server import build_server
from esbridge.service.models import IndexStatus
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings

KEYS = {"index", "engine", "exists", "indices", "chunks", "partial", "model", "index_model"}


def listed_and_called(
    settings: Settings | None = None, **build: Any
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    server = build_server(settings or service_settings(), **{"load_model": False, **build})

    async def session() -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool("index_status", {})
            return tools["index_status"].output_schema, result.structured_content, result.is_error

    return anyio.run(session)


def test_the_mcp_tool_lists_an_output_schema_with_every_field() -> None:
    schema, _, _ = listed_and_called(embedder=HashingEmbedder())
    assert schema is not None
    assert set(schema["properties"]) == KEYS | {"warnings", "model_problem"}
    assert set(schema["required"]) == KEYS - {"warnings", "model_problem"}
    assert schema["properties"]["chunks"]["type"] == "integer"


def test_the_mcp_tool_answers_the_keys_it_always_answered(make_client: ClientFactory) -> None:
    writer = make_client(api_keys=[KEY])
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).status_code == 200
    _, status, failed = listed_and_called(embedder=HashingEmbedder())
    assert not failed
    assert status is not None
    assert set(status) == KEYS  # no warnings when whole, no model_problem when the model loaded
    assert (status["index"], status["engine"], status["exists"]) == ("notes", "embedded", True)
    assert status["chunks"] == len(RECORDS)
    assert status["partial"] is False
    assert status["indices"] == ["notes-v1"]
    assert status["model"] == "hashing-32"
    assert status["index_model"].startswith("hashing-32 (")


def test_the_mcp_tool_names_the_model_problem_when_no_model_loaded(tmp_path: Path) -> None:
    missing = load_settings(index="notes", embedding={"model": str(tmp_path / "no-such-model")})
    _, status, failed = listed_and_called(missing, load_model=True)
    assert not failed
    assert status is not None
    assert set(status) == KEYS | {"model_problem"}
    assert (status["exists"], status["chunks"], status["indices"], status["index_model"]) == (False, 0, [], None)
    assert status["model"] is None
    assert "no-such-model" in status["model_problem"]


def test_the_backend_answers_a_typed_status_on_the_embedded_engine(tmp_path: Path) -> None:
    settings = load_settings(index="notes", data_dir=tmp_path)
    backend = Backend(settings, HashingEmbedder())
    engine = EmbeddedEngine(tmp_path)
    try:
        assert backend.index_status(engine) == IndexStatus(
            index="notes", engine="embedded", exists=False, indices=[], chunks=0, partial=False, model="hashing-32",
            index_model=None,
        )  # fmt: skip
        backend.ensure_index(engine)
        status = backend.index_status(engine)
    finally:
        engine.close()
    assert isinstance(status, IndexStatus)
    assert (status.exists, status.indices, status.chunks, status.warnings) == (True, ["notes-v1"], 0, [])
    assert status.index_model is None, "an empty index records its model once a vector of it lands"
