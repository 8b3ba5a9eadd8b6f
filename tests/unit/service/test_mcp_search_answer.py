"""The MCP ``search`` tool lists ``SearchResponse``'s schema as its output schema, and answers the response with
its null fields, as the HTTP API does, as structured content and as the same JSON in a text block."""

from __future__ import annotations

import json
from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client
from mcp.types import CallToolResult

from esbridge.query.models import SearchResponse
from esbridge.service.mcp_server import build_server
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import service_settings


def listed_and_called(arguments: dict[str, Any]) -> tuple[dict[str, Any] | None, CallToolResult]:
    server = build_server(service_settings(), embedder=HashingEmbedder(), load_model=False)

    async def session() -> tuple[dict[str, Any] | None, CallToolResult]:
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools["search"].output_schema, await client.call_tool("search", arguments)

    return anyio.run(session)


def test_the_search_tool_lists_the_search_response_schema(client: TestClient) -> None:
    schema, _ = listed_and_called({"query": "x"})
    assert schema is not None
    assert set(schema["properties"]) == set(SearchResponse.model_fields)
    assert {"query", "search_mode", "took_ms"} <= set(schema["required"])
    assert "SearchHit" in schema["$defs"]


def test_the_search_tool_answers_the_response_with_its_null_fields(client: TestClient) -> None:
    _, result = listed_and_called({"query": "sunlight electricity", "top_n": 2, "explain": True})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["results"][0]["doc_id"] == "solar"
    assert answer["groups"] is None  # no group asked for: null, as over HTTP
    assert answer["results"][0]["explain"]["rerank_score"] is None
    assert SearchResponse.model_validate(answer).results[0].doc_id == "solar"
    block = result.content[0]
    assert block.type == "text"
    assert json.loads(block.text) == answer


def test_a_query_that_only_repeats_words_past_the_clause_limit_is_not_said_to_be_cut(client: TestClient) -> None:
    _, result = listed_and_called({"query": "sunlight electricity " * 150, "top_n": 2})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["warnings"] == [
        "the query repeats words beyond the engine's clause limit: BM25 searched each of its 2 distinct word(s) once"
    ]
    assert answer["results"][0]["doc_id"] == "solar"
    words = " ".join(f"word{n}" for n in range(400))  # more distinct words than fit: cut
    _, result = listed_and_called({"query": words, "top_n": 2})
    assert result.structured_content is not None
    assert result.structured_content["warnings"] == [
        "the query is too long for the engine's clause limit: BM25 searched at most its first 146 distinct words"
    ]
