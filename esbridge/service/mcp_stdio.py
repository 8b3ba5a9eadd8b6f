"""The MCP server over stdio, answering requests the SDK's transport cannot read instead of leaving them unanswered.

A JSON string may escape a lone UTF-16 surrogate (``"\\ud800"``, half of an emoji cut in two): the line is JSON, but
no text. The SDK's stdio transport refuses such a line and drops it, so the agent waits for an answer that never
comes. Here a request in such a line is answered with a JSON-RPC error naming where the surrogate is, as the HTTP
API refuses such a body by name (422). So is one the SDK's parser cannot read otherwise (nested more than about 200
levels deep, a number of more than 4,300 digits): a parse error (-32700) with its reason. Its id is read without
decoding the rest of the line, which may be nested deeper than Python's own decoder goes. A line that is not JSON at
all gets a parse error too, and JSON that is no JSON-RPC message an invalid request (-32600); where no id can be read,
the answer's id is null, as JSON-RPC 2.0 says.

Two more requests the SDK leaves the agent waiting on, or answers without saying why. A request whose id is no string
or integer (``1.5``, ``1.0``, ``null``, ``true``) is read by the SDK as a notification, which gets no answer: one of
a method the server answers as a request is refused (-32600, id null, as the id could not be read) saying what an id
must be. And params the SDK refuses with a bare "Invalid request parameters" (``"arguments": "q"``, no tool name) are
refused naming the field and why.
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
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from mcp_types.methods import MONOLITH_REQUESTS, SPEC_CLIENT_METHODS
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
        refused_params: dict[str | int, str] = {}
        answering = _AnsweringUnreadable(read_stream, write_stream, refused_params)
        writing = _NamingRefusedParams(write_stream, refused_params)
        await lowlevel.run(answering, writing, lowlevel.create_initialization_options())


def refusal(item: object) -> JSONRPCError | None:
    """The answer to a transport failure that is a message the SDK cannot read, as JSON-RPC 2.0 answers it: with the
    request's id when it can be read, else null; None for anything else, and for what is not to be answered (a
    notification, a response, a blank line)."""
    if not isinstance(item, ValidationError):
        return None
    problems = item.errors(include_url=False)
    if len(problems) == 1 and problems[0]["type"] == "json_invalid":
        line = problems[0].get("input")
        return _unreadable(line, problems[0]["msg"]) if isinstance(line, str) and line.strip() else None
    return _not_a_message(problems)


def _unreadable(line: str, reason: str) -> JSONRPCError | None:
    """A line that is not JSON, or JSON the SDK's parser cannot read (a lone surrogate, deep nesting, long numbers)."""
    try:
        where = surrogate_location(json.loads(line))  # Python's decoder keeps a lone surrogate as it is
        json_text = True
    except json.JSONDecodeError:  # not JSON: whether it was a notification cannot be known, so it is answered
        where, json_text = None, False
    except (ValueError, RecursionError):  # nested deeper than Python's decoder goes, an int over its digit limit
        where, json_text = None, True
    request_id = _member(line, "id")
    if json_text and (_member(line, "method") is _ABSENT or request_id is _ABSENT):
        return None  # a response or a notification: nothing to answer
    if where is None:
        error = ErrorData(code=PARSE_ERROR, message=f"the request cannot be read: {reason}")
    else:
        # repr() writes a surrogate in the path (one in a key) as its escape, so the answer can be sent.
        message = f"{where!r} is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)"
        error = ErrorData(code=INVALID_PARAMS, message=message)
    return JSONRPCError(jsonrpc="2.0", id=_echoable(request_id), error=error)


def _not_a_message(problems: list[Any]) -> JSONRPCError | None:
    """JSON that is no JSON-RPC 2.0 message (``[]``, ``{"foo": 1}``, ``"jsonrpc": "1.0"``), answered as an invalid
    request unless it is a response (one the agent sends to a request of the server's)."""
    whole = next((problem["input"] for problem in problems if len(problem["loc"]) <= 1), None)
    whole = next((problem["input"] for problem in problems if problem["type"] == "missing"), whole)
    if isinstance(whole, dict) and "method" not in whole and ("result" in whole or "error" in whole):
        return None
    request_id = whole.get("id", _ABSENT) if isinstance(whole, dict) else _ABSENT
    message = 'not a JSON-RPC 2.0 message: an object with "jsonrpc": "2.0" and a "method" was expected'
    return JSONRPCError(jsonrpc="2.0", id=_echoable(request_id), error=ErrorData(code=INVALID_REQUEST, message=message))


def _echoable(request_id: Any) -> str | int | None:
    """``request_id`` when an answer can carry it (a string that is text, an integer), else None (JSON null)."""
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return None if surrogate_location(request_id) is not None else request_id


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


def misread_request(item: object) -> JSONRPCError | None:
    """The answer to a request the SDK read as a notification, its id being no string or integer; None for anything
    else. A notification of a method the server answers as a request is always one: MCP's notifications are
    ``notifications/...``."""
    message = getattr(item, "message", None)
    if not isinstance(message, JSONRPCNotification) or message.method not in SPEC_CLIENT_METHODS:
        return None
    text = (
        f'{message.method!r} is a request: its "id" must be a string or an integer; a message whose id is neither '
        "(1.5, null, true), or that has none, is read as a notification, which gets no answer"
    )
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=text))


def params_problem(item: object) -> tuple[str | int, str] | None:
    """A request's id and why the SDK will refuse its params (the SDK's error says only "Invalid request
    parameters"); None when they are valid, or it is no request."""
    message = getattr(item, "message", None)
    if not isinstance(message, JSONRPCRequest) or message.method not in MONOLITH_REQUESTS:
        return None
    body: dict[str, Any] = {"method": message.method}
    if message.params is not None:
        body["params"] = message.params
    try:
        MONOLITH_REQUESTS[message.method].model_validate(body, by_name=False)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"])
            problems.append(f"{where}: {error['msg']}" if where else error["msg"])
        return message.id, "invalid params: " + "; ".join(problems)
    return None


_SDK_PARAMS_ERROR = "Invalid request parameters"


class _NamingRefusedParams:
    """The transport's write stream, with the SDK's bare refusal of a request's params replaced by one naming them."""

    def __init__(self, inner: Any, refused_params: dict[str | int, str]) -> None:
        self._inner = inner
        self._refused_params = refused_params

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, (JSONRPCError, JSONRPCResponse)) and message.id is not None:
            problem = self._refused_params.pop(message.id, None)
            if problem is not None and isinstance(message, JSONRPCError) and message.error.message == _SDK_PARAMS_ERROR:
                error = ErrorData(code=message.error.code, message=problem)
                item = SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error), metadata=item.metadata)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _NamingRefusedParams:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self._inner.__aexit__(exc_type, exc, traceback)


class _AnsweringUnreadable:
    """The transport's read stream, with the requests ``refusal`` and ``misread_request`` answer answered and left
    out, and the requests whose params the SDK will refuse noted with why."""

    def __init__(self, inner: Any, write_stream: Any, refused_params: dict[str | int, str]) -> None:
        self._inner = inner
        self._write_stream = write_stream
        self._refused_params = refused_params

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            answer = refusal(item) or misread_request(item)
            if answer is None:
                problem = params_problem(item)
                if problem is not None:
                    self._refused_params[problem[0]] = problem[1]
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
