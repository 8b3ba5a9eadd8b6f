"""The MCP ``search`` tool's arguments, through the SDK's in-process client on the embedded engine: unknown
arguments are refused like the HTTP API refuses them (and the listed schemas say so), and bad ones are reported
in one line."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.types import CallToolResult

from esbridge.config import Settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from esbridge.service.mcp_server import build_server
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import call_tool, service_settings, tool_text


def listed_input_schemas(settings: Settings | None = None) -> dict[str, dict[str, Any]]:
    server = build_server(settings or service_settings(), embedder=HashingEmbedder(), load_model=False)

    async def session() -> dict[str, dict[str, Any]]:
        async with Client(server) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return anyio.run(session)


def test_an_unknown_search_argument_is_a_tool_error_naming_it(client: TestClient) -> None:
    result = call_tool("search", {"query": "x", "bogus_field": 1, "another": 2})
    assert result.is_error
    assert "unknown argument(s): another, bogus_field" in tool_text(result)
    assert "accepted: category, collapse, explain" in tool_text(result)


def test_the_listed_input_schemas_refuse_unknown_arguments_too() -> None:
    schemas = listed_input_schemas()
    assert set(schemas) == {"search", "index_status"}
    for schema in schemas.values():
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
    assert "query" in schemas["search"]["properties"]
    assert schemas["search"]["$defs"]["Filters"]["additionalProperties"] is False


def test_the_listed_top_n_has_the_bound_the_search_enforces() -> None:
    assert listed_input_schemas()["search"]["properties"]["top_n"]["maximum"] == 50  # pipeline.top_n_max
    settings = service_settings().model_copy(update={"pipeline": PipelineSettings(top_n_max=20)})
    assert listed_input_schemas(settings)["search"]["properties"]["top_n"]["maximum"] == 20
    assert "top_n_max (50), got 51" in tool_text(call_tool("search", {"query": "x", "top_n": 51}))


def test_a_search_without_top_n_answers_when_top_n_max_is_below_the_default(client: TestClient) -> None:
    settings = service_settings().model_copy(update={"pipeline": PipelineSettings(top_n_max=2)})
    assert listed_input_schemas(settings)["search"]["properties"]["top_n"]["default"] == 2
    result = call_tool("search", {"query": "energy"}, settings)
    assert not result.is_error, tool_text(result)
    assert result.structured_content is not None
    assert len(result.structured_content["results"]) == 2
    assert "top_n_max (2), got 3" in tool_text(call_tool("search", {"query": "energy", "top_n": 3}, settings))


def test_an_unknown_index_status_argument_is_refused() -> None:
    result = call_tool("index_status", {"verbose": True})
    assert result.is_error
    assert "unknown argument(s): verbose (accepted: none)" in tool_text(result)


def test_a_search_with_known_arguments_answers(client: TestClient) -> None:
    result = call_tool("search", {"query": "sunlight electricity", "top_n": 2})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["results"][0]["doc_id"] == "solar"


def test_bad_arguments_are_reported_in_one_line() -> None:
    result = call_tool("search", {"query": "", "top_n": 0})
    assert result.is_error
    message = tool_text(result)
    assert "\n" not in message
    assert "errors.pydantic.dev" not in message
    assert message == (
        "Error executing tool search: invalid arguments: query: String should have at least 1 character; "
        "top_n: Input should be greater than or equal to 1"
    )


def test_a_blank_query_is_reported_like_other_bad_arguments() -> None:
    result = call_tool("search", {"query": "   "})
    assert result.is_error
    assert tool_text(result) == "Error executing tool search: invalid arguments: query: query must not be blank"


class NativePanic(BaseException):
    """What a Rust library's panic becomes in Python (pyo3's PanicException): no ``Exception``."""


def test_a_native_library_panicking_mid_session_is_a_tool_error_and_the_session_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def panicking(self: HybridSearcher, request: SearchRequest, *, time_s: float | None = None) -> None:
        raise NativePanic("range end index 18446744073709551555 out of range for slice of length 8")

    monkeypatch.setattr(HybridSearcher, "search", panicking)
    server = build_server(service_settings(), embedder=HashingEmbedder(), load_model=False)

    async def session() -> tuple[CallToolResult, CallToolResult]:
        async with Client(server) as client:
            with anyio.fail_after(30):
                return await client.call_tool("search", {"query": "x"}), await client.call_tool("index_status", {})

    failed, status = anyio.run(session)
    assert failed.is_error
    assert tool_text(failed) == (
        "Error executing tool search: unexpected failure: NativePanic: range end index 18446744073709551555 out "
        "of range for slice of length 8"
    )
    assert not status.is_error


def test_an_unexpected_error_names_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(self: HybridSearcher, request: SearchRequest, *, time_s: float | None = None) -> None:
        raise ValueError("Failed to open file for read: 'x.idx'")

    monkeypatch.setattr(HybridSearcher, "search", failing)
    result = call_tool("search", {"query": "x"})
    assert result.is_error
    assert tool_text(result) == (
        "Error executing tool search: unexpected failure: ValueError: Failed to open file for read: 'x.idx'"
    )


def test_an_error_naming_what_a_request_got_wrong_stays_short_however_many_names_it_sent() -> None:
    """An agent reads the whole message into its context."""
    weights = {f"w{n:05}": 1.0 for n in range(20_000)}
    message = tool_text(call_tool("search", {"query": "x", "weights": weights}))
    assert message == (
        "Error executing tool search: weights name no retriever of this pipeline: w00000, w00001, w00002, w00003, "
        "w00004, w00005, w00006, w00007, w00008, w00009 and 19990 more; its retrievers: bm25, knn"
    )
    unknown = {f"a{n:05}": 1 for n in range(20_000)}
    message = tool_text(call_tool("search", {"query": "x", **unknown}))
    assert message.startswith("Error executing tool search: unknown argument(s): a00000, a00001, ")
    assert message.endswith(
        "a00009 and 19990 more (accepted: category, collapse, explain, filters, fusion, graph, group, mode, query, "
        "recency, rerank, top_n, weights)"
    )


def test_native_mode_on_the_embedded_engine_is_refused_naming_it_and_what_to_do() -> None:
    result = call_tool("search", {"query": "energy", "mode": "native"})
    assert result.is_error
    assert tool_text(result) == (
        "Error executing tool search: mode 'native' asks the engine to fuse, and the embedded engine has no "
        "server-side fusion: use mode 'auto' or 'client' (esbridge fuses)"
    )
