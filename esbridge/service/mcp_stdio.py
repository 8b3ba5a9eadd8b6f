"""The MCP server over stdio, answering requests the SDK's transport cannot read instead of leaving them unanswered.

A JSON string may escape a lone UTF-16 surrogate (``"\\ud800"``, half of an emoji cut in two): the line is JSON, but
no text. The SDK's stdio transport refuses such a line and drops it, so the agent waits for an answer that never
comes. Here a request in such a line is answered with a JSON-RPC error naming where the surrogate is, as the HTTP
API refuses such a body by name (422).
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, ErrorData, JSONRPCError
from pydantic import ValidationError

from esbridge.ingest.json_lines import surrogate_location


async def serve_stdio(server: MCPServer, stdin: Any = None, stdout: Any = None) -> None:
    """What ``server.run("stdio")`` does (the process's stdin and stdout unless given), with such requests answered.
    An SDK whose server no longer has the attribute its own stdio runner uses is run by that runner, without."""
    lowlevel: Any = getattr(server, "_lowlevel_server", None)  # as MCPServer.run_stdio_async runs it
    if lowlevel is None and stdin is None and stdout is None:
        await server.run_stdio_async()
        return
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        answering = _AnsweringUnreadable(read_stream, write_stream)
        await lowlevel.run(answering, write_stream, lowlevel.create_initialization_options())


def refusal(item: object) -> JSONRPCError | None:
    """The answer to a transport failure that is a request holding a lone surrogate; None for anything else."""
    if not isinstance(item, ValidationError):
        return None
    problems = item.errors(include_url=False)
    line = problems[0].get("input") if len(problems) == 1 and problems[0]["type"] == "json_invalid" else None
    if not isinstance(line, str):
        return None
    try:
        data = json.loads(line)  # Python's decoder keeps a lone surrogate as it is
    except ValueError:
        return None
    request_id = data.get("id") if isinstance(data, dict) and "method" in data else None
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or surrogate_location(request_id):
        return None  # a notification, a response, or an id that cannot be echoed: nothing to answer
    where = surrogate_location(data)
    if where is None:
        return None
    # repr() writes a surrogate in the path (one in a key) as its escape, so the answer can be sent.
    message = f"{where!r} is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_PARAMS, message=message))


class _AnsweringUnreadable:
    """The transport's read stream, with the requests ``refusal`` answers answered and left out."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write_stream = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            answer = refusal(item)
            if answer is None:
                return item
            await self._write_stream.send(SessionMessage(answer))

    def __aiter__(self) -> _AnsweringUnreadable:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweringUnreadable:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()
