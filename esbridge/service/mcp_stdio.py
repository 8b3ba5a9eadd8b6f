"""The MCP server over stdio, answering requests the SDK's transport cannot read instead of leaving them unanswered.

A JSON string may escape a lone UTF-16 surrogate (``"\\ud800"``, half of an emoji cut in two): the line is JSON, but
no text. The SDK's stdio transport refuses such a line and drops it, so the agent waits for an answer that never
comes. Here a request in such a line is answered with a JSON-RPC error naming where the surrogate is, as the HTTP
API refuses such a body by name (422). So is one the SDK's parser cannot read otherwise (nested more than about 200
levels deep, a number of more than 4,300 digits): a parse error (-32700) with its reason. Its id is read without
decoding the rest of the line, which may be nested deeper than Python's own decoder goes.
"""

from __future__ import annotations

import json
import re
from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, PARSE_ERROR, ErrorData, JSONRPCError
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
    """The answer to a transport failure that is a request the SDK cannot read (a lone surrogate, nesting deeper than
    its parser goes, a number too long for it) whose id can be read; None for anything else."""
    if not isinstance(item, ValidationError):
        return None
    problems = item.errors(include_url=False)
    line = problems[0].get("input") if len(problems) == 1 and problems[0]["type"] == "json_invalid" else None
    if not isinstance(line, str) or _member(line, "method") is _ABSENT:
        return None
    request_id = _member(line, "id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or surrogate_location(request_id):
        return None  # a notification, a response, or an id that cannot be echoed: nothing to answer
    try:
        where = surrogate_location(json.loads(line))  # Python's decoder keeps a lone surrogate as it is
    except (ValueError, RecursionError):  # nested deeper than Python's decoder goes, an int over its digit limit
        where = None
    if where is None:
        error = ErrorData(code=PARSE_ERROR, message=f"the request cannot be read: {problems[0]['msg']}")
    else:
        # repr() writes a surrogate in the path (one in a key) as its escape, so the answer can be sent.
        message = f"{where!r} is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)"
        error = ErrorData(code=INVALID_PARAMS, message=message)
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


_ABSENT = object()
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')  # strings (escapes included) and brackets


def _member(line: str, name: str) -> Any:
    """The value of the top-level member ``name`` of the JSON object on ``line`` when it is a plain value, else
    ``_ABSENT``; read without decoding the other members, which may be nested deeper than any decoder goes."""
    depth, key = 0, json.dumps(name)
    for token in _TOKENS.finditer(line):
        text = token.group()
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(text, 0)
        if depth != 1 or text != key:
            continue
        rest = line[token.end() :].lstrip()
        if rest.startswith(":"):
            try:
                return json.JSONDecoder().raw_decode(rest[1:].lstrip())[0]
            except (ValueError, RecursionError):
                return _ABSENT
    return _ABSENT


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
