"""A search answer has the same fields over HTTP, MCP and ``esbridge search --json``: every field of
``SearchResponse``, null where it has no value, as the Python API's model holds them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tests.unit.service.conftest import call_tool, tool_text
from tests.unit.service.test_request_types import ClosableEmbedder

REQUEST: dict[str, Any] = {"query": "sunlight electricity", "top_n": 2, "explain": True}


def shape(value: Any) -> Any:
    """The keys at every level, without the values (timings and scores differ from run to run)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return None if value is None else "value"


def test_http_mcp_and_the_cli_answer_the_same_fields_nulls_included(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = client.post("/v1/search", json=REQUEST)
    assert http.status_code == 200, http.text
    over_http = http.json()

    result = call_tool("search", REQUEST)
    assert not result.is_error, tool_text(result)
    over_mcp = result.structured_content
    assert over_mcp is not None
    assert json.loads(tool_text(result)) == over_mcp

    from esbridge.cli import main

    monkeypatch.setattr("esbridge.cli.search.open_query_embedder", lambda settings: (ClosableEmbedder(), None))
    args = ["search", REQUEST["query"], "--top-n", "2", "--explain", "--json", "--engine", "embedded"]
    printed = CliRunner().invoke(main, [*args, "--index", "notes"])
    assert printed.exit_code == 0, printed.output
    from_cli = json.loads(printed.stdout)

    for answer in (over_http, over_mcp, from_cli):
        assert answer["groups"] is None  # no group asked for: null, not left out
        assert answer["results"][0]["doc_id"] == "solar"
        assert answer["results"][0]["title"] == "Solar panels"
        explain = answer["results"][0]["explain"]
        assert "rerank_score" in explain and explain["rerank_score"] is None
    assert shape(over_mcp) == shape(over_http)
    assert shape(from_cli) == shape(over_http)
