"""The MCP server over stdio answers every request, one whose line holds a lone UTF-16 surrogate escape included:
the SDK's transport cannot read such a line and would leave the agent waiting for an answer."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio

import esbridge
from esbridge.service.mcp_server import build_server
from esbridge.service.mcp_stdio import serve_stdio
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import service_settings

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


def search_line(request_id: Any, arguments: str) -> str:
    """A tools/call line written by hand: json.dumps would escape a lone surrogate the same way, but this shows it."""
    return (
        f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call", '
        f'"params": {{"name": "search", "arguments": {arguments}}}}}'
    )


def answers(*lines: str, expected: int, stdout: io.StringIO | None = None) -> dict[Any, dict[str, Any]]:
    """The answers of a stdio session that sends ``lines`` after initializing, by request id. Its stdin stays open
    until ``expected`` answers are out, as an agent's does: at the end of stdin the session ends, tool calls still
    running with it."""
    sent = [json.dumps(INITIALIZE), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), *lines]
    stdout = stdout if stdout is not None else io.StringIO()
    server = build_server(service_settings(), embedder=HashingEmbedder(), load_model=False)

    def found() -> list[dict[str, Any]]:
        return [json.loads(line) for line in stdout.getvalue().splitlines() if line.strip()]

    async def stdin() -> AsyncIterator[str]:
        for line in sent:
            yield line + "\n"
        while sum("id" in answer for answer in found()) < expected:
            await anyio.sleep(0.01)

    async def session() -> None:
        with anyio.fail_after(30):
            await serve_stdio(server, stdin(), anyio.wrap_file(stdout))

    anyio.run(session)
    return {answer["id"]: answer for answer in found() if "id" in answer}


def test_a_request_holding_a_lone_surrogate_is_answered_naming_where_and_the_session_goes_on() -> None:
    found = answers(
        search_line(1, '{"query": "\\ud800abc"}'),
        search_line("two", '{"query": "x", "weights": {"\\udc00": 1}}'),
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "\\ud800"}}',
        search_line(3, '{"query": "   "}'),
        expected=4,
    )
    assert found[1]["error"] == {
        "code": -32602,
        "message": "'params.arguments.query' is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)",
    }
    assert found["two"]["error"]["message"] == (
        "'params.arguments.weights.\\udc00' is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)"
    )
    assert found[3]["result"]["isError"] is True  # the next request is answered as ever
    assert "query must not be blank" in found[3]["result"]["content"][0]["text"]
    assert set(found) == {0, 1, "two", 3}


def test_a_whole_surrogate_pair_is_text_and_reaches_the_tool() -> None:
    found = answers(search_line(1, '{"query": "solar \\ud83d\\ude00", "top_n": 0}'), expected=2)
    assert found[1]["result"]["isError"] is True
    assert found[1]["result"]["content"][0]["text"] == (
        "Error executing tool search: invalid arguments: top_n: Input should be greater than or equal to 1"
    )


def test_a_request_the_sdk_cannot_parse_is_answered_with_its_reason_and_the_session_goes_on() -> None:
    deep = '{"a": ' * 300 + "1" + "}" * 300  # beyond the SDK's parser (200 levels), within Python's
    deeper = '{"a": ' * 5000 + "1" + "}" * 5000  # beyond Python's decoder too
    found = answers(
        search_line(1, f'{{"query": "x", "filters": {deep}}}'),
        search_line("two", f'{{"query": "x", "filters": {deeper}}}'),
        search_line(3, '{"query": "x", "top_n": ' + "9" * 5000 + "}"),
        search_line(4, '{"query": "   "}'),
        expected=5,
    )
    for request_id in (1, "two", 3):
        assert found[request_id]["error"]["code"] == -32700
        assert found[request_id]["error"]["message"].startswith("the request cannot be read: Invalid JSON: ")
    assert "recursion limit exceeded" in found[1]["error"]["message"]
    assert "number out of range" in found[3]["error"]["message"]
    assert "query must not be blank" in found[4]["result"]["content"][0]["text"]  # the next request is answered


def test_a_line_that_is_not_json_or_no_message_is_answered_with_a_null_id_when_none_can_be_read() -> None:
    """JSON-RPC 2.0: a parse error, or an invalid request whose id cannot be detected, is answered with id null."""
    stdout = io.StringIO()
    lines = [
        "hello",
        '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "search"',  # cut off before its id
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {',  # cut off after it: its id is read
        '{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/call"}',  # an id that cannot be echoed
        "[]",
        '{"jsonrpc": "1.0", "id": 8, "method": "ping"}',
        "",  # a blank line is no message
        '{"jsonrpc": "2.0", "id": 5, "result": {"x": "\\ud800"}}',  # a response: never answered
        search_line(9, '{"query": "   "}'),
    ]
    found = answers(*lines, expected=8, stdout=stdout)
    unidentified = [json.loads(line) for line in stdout.getvalue().splitlines() if '"id":null' in line]
    assert [answer["error"]["code"] for answer in unidentified] == [-32700, -32700, -32602, -32600]
    assert unidentified[0]["error"]["message"].startswith("the request cannot be read: Invalid JSON: expected value")
    assert found[7]["error"]["code"] == -32700
    assert found[8]["error"] == {
        "code": -32600,
        "message": 'not a JSON-RPC 2.0 message: an object with "jsonrpc": "2.0" and a "method" was expected',
    }
    assert "query must not be blank" in found[9]["result"]["content"][0]["text"]  # the session goes on
    assert set(found) == {0, 7, 8, 9, None}


def test_a_request_whose_id_is_no_string_or_integer_is_answered_saying_what_an_id_must_be() -> None:
    """The SDK reads such a request as a notification: unanswered, the agent would wait for ever."""
    stdout = io.StringIO()
    lines = [
        '{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}',
        '{"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "index_status"}}',
        '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}',  # a notification
        search_line(2, '{"query": "   "}'),
    ]
    found = answers(*lines, expected=5, stdout=stdout)
    unidentified = [json.loads(line) for line in stdout.getvalue().splitlines() if '"id":null' in line]
    assert [answer["error"]["code"] for answer in unidentified] == [-32600, -32600, -32600]
    assert unidentified[0]["error"]["message"] == (
        "'tools/list' is a request: its \"id\" must be a string or an integer; a message whose id is neither (1.5, "
        "null, true), or that has none, is read as a notification, which gets no answer"
    )
    assert unidentified[1]["error"]["message"].startswith("'tools/call' is a request")
    assert "query must not be blank" in found[2]["result"]["content"][0]["text"]  # the session goes on
    assert set(found) == {0, 2, None}


def test_the_server_names_its_version() -> None:
    assert answers(expected=1)[0]["result"]["serverInfo"] == {"name": "esbridge", "version": esbridge.__version__}


def test_params_the_sdk_refuses_are_refused_naming_the_field() -> None:
    lines = [
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": "q"}}',
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": {"query": "x"}}}',
        '{"jsonrpc": "2.0", "id": 3, "method": "tools/call"}',
        search_line(4, '{"query": "   "}'),
    ]
    found = answers(*lines, expected=5)
    assert found[1]["error"] == {
        "code": -32602,
        "message": "invalid params: params.arguments: Input should be a valid dictionary",
    }
    assert found[2]["error"]["message"] == "invalid params: params.name: Field required"
    assert found[3]["error"]["message"] == "invalid params: params: Field required"
    assert "query must not be blank" in found[4]["result"]["content"][0]["text"]
