"""The MCP tools against an engine that accepts connections and never answers (a hung node): each answers a tool
error naming the engine and the time it was given once ``service.request_timeout_s`` has passed, however long the
engine client's own timeouts and retries would wait (here 4 x 5 s)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcp import Client

from esbridge.config import load_settings
from esbridge.service.mcp_server import build_server

ARGUMENTS: dict[str, dict[str, Any]] = {"index_status": {}, "search": {"query": "sunlight"}}


@pytest.mark.parametrize("engine", [None, "opensearch"], ids=["detected", "given"])
@pytest.mark.parametrize("tool", sorted(ARGUMENTS))
def test_a_tool_gives_up_on_a_silent_engine_at_the_request_timeout(
    silent_url: str, tool: str, engine: str | None
) -> None:
    settings = load_settings(
        url=silent_url, engine=engine, retries=3, timeout_s=5, index="notes", service={"request_timeout_s": 1}
    )
    server = build_server(settings, load_model=False)

    async def call() -> tuple[bool, str, float]:  # the session's end waits for nothing the engine holds either
        async with Client(server) as client:
            began = time.monotonic()
            result = await client.call_tool(tool, ARGUMENTS[tool])
            took = time.monotonic() - began
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            return result.is_error, text, took

    began = time.monotonic()
    failed, message, took = anyio.run(call)
    assert took < 3, f"{tool} answered after {took:.1f} s: {message}"
    assert time.monotonic() - began < 5, "the session's end waited for the engine client's retries"
    assert failed, message
    if tool == "search" and engine is not None:  # connected at once: the search's own stages gave up in time
        assert f"search failed on {silent_url}" in message and "did not answer within" in message
    else:
        assert message.startswith(f"Error executing tool {tool}: the engine at {silent_url} did not answer within 1 s ")
        assert "(service.request_timeout_s; gave up after 1." in message
