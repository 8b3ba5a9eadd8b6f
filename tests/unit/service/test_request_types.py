"""A search request reads the same on every interface: numbers and switches only as JSON numbers and booleans (no
``true`` for a count, no ``"yes"`` for a switch), a query of invisible characters only is blank, and ``filters``
may be null. Over HTTP a refusal is a 422 naming the field; over MCP a tool error naming it; the CLI's own options,
which it turns into typed values itself, keep working."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from pydantic import ValidationError

from esbridge.query.models import Filters, SearchRequest
from esbridge.text import is_blank
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import call_tool, fields, tool_text
from tests.unit.service.test_mcp_arguments import listed_input_schemas

LOOSE: list[tuple[dict[str, Any], str]] = [
    ({"top_n": True}, "top_n"),
    ({"top_n": "3"}, "top_n"),
    ({"top_n": 2.0}, "top_n"),
    ({"explain": "yes"}, "explain"),
    ({"explain": 1}, "explain"),
    ({"collapse": "true"}, "collapse"),
    ({"graph": 0}, "graph"),
    ({"recency": "off"}, "recency"),
    ({"rerank": 1}, "rerank"),
    ({"group": "yes"}, "group"),
    ({"weights": {"bm25": "1"}}, "weights.bm25"),
    ({"weights": {"knn": True}}, "weights.knn"),
    ({"filters": {"include_draft": "yes"}}, "filters.include_draft"),
    ({"filters": {"include_deprecated": 1}}, "filters.include_deprecated"),
    ({"filters": {"modified_after": 0}}, "filters.modified_after"),
]
INVISIBLE = [
    "\u200b",
    "\u200c\u200d",
    "\u2060",
    "\ufeff",
    "\u200b \u00ad\u2061\t",
    "\u180e",
    "\u3164",
    "\ufe0f",
    "\u0000\u0001",
    "\u001b\u007f ",
]


@pytest.mark.parametrize(("extra", "field"), LOOSE)
def test_a_loosely_typed_value_is_a_422_naming_its_field(client: TestClient, extra: dict[str, Any], field: str) -> None:
    answer = client.post("/v1/search", json={"query": "energy", **extra})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["kind"] == "validation"
    assert fields(answer) == [f"body.{field}"]


@pytest.mark.parametrize(("extra", "field"), LOOSE)
def test_a_loosely_typed_value_is_a_tool_error_naming_its_field(
    client: TestClient, extra: dict[str, Any], field: str
) -> None:
    result = call_tool("search", {"query": "energy", **extra})
    assert result.is_error
    assert tool_text(result).startswith(f"Error executing tool search: invalid arguments: {field}: ")


def test_numbers_and_switches_of_their_own_type_are_accepted(client: TestClient) -> None:
    body = {
        "query": "sunlight",
        "top_n": 2,
        "explain": True,
        "collapse": False,
        "group": False,
        "weights": {"bm25": 1, "knn": 0.5},  # a whole number is a number
        "filters": {"include_draft": True, "terms": {"tags": ["energy"]}},
    }
    answer = client.post("/v1/search", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["doc_id"] == "solar"
    result = call_tool("search", body)
    assert not result.is_error, tool_text(result)
    assert result.structured_content is not None
    assert result.structured_content["results"][0]["doc_id"] == "solar"
    dated = SearchRequest.model_validate({"query": "x", "filters": {"modified_after": "2020-01-01T00:00:00Z"}})
    assert dated.filters.modified_after is not None and dated.filters.modified_after.year == 2020


class Index:
    """An integral number of a program's own type, as numpy's and others' are: an int through ``__index__``."""

    def __index__(self) -> int:
        return 4


@pytest.mark.parametrize("count", [np.int64(4), np.int32(4), np.uint8(4), Index(), 4])
def test_the_python_api_takes_any_integral_count_as_a_plain_int(count: object) -> None:
    request = SearchRequest(query="x", top_n=count)  # type: ignore[arg-type]
    assert type(request.top_n) is int and request.top_n == 4
    assert SearchRequest.model_validate({"query": "x", "top_n": count}).top_n == 4


@pytest.mark.parametrize("count", [True, np.bool_(True), 4.0, np.float64(4.0), "4", np.int64(0)])
def test_the_python_api_still_refuses_a_count_that_is_not_a_whole_number_of_at_least_1(count: object) -> None:
    with pytest.raises(ValidationError, match="top_n"):
        SearchRequest(query="x", top_n=count)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", INVISIBLE)
def test_a_query_of_invisible_characters_is_blank_everywhere(client: TestClient, query: str) -> None:
    assert is_blank(query)
    answer = client.post("/v1/search", json={"query": query})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["fields"] == [{"field": "body.query", "message": "query must not be blank"}]
    result = call_tool("search", {"query": query})
    assert tool_text(result) == "Error executing tool search: invalid arguments: query: query must not be blank"
    from esbridge.cli import main

    refused = CliRunner().invoke(main, ["search", query, "--engine", "embedded", "--index", "notes"])
    assert refused.exit_code == 2, refused.output
    assert "Invalid value for 'QUERY': query: query must not be blank" in refused.stderr


def test_a_query_with_a_visible_character_among_invisible_ones_is_not_blank() -> None:
    assert not is_blank("\u200bsolar\u200d")
    assert not is_blank("\u200d\U0001f600")  # an emoji after a joiner
    assert SearchRequest(query="\ufeffsolar").query == "\ufeffsolar"


def test_null_filters_are_no_filters_on_both_interfaces_and_both_schemas_say_so(client: TestClient) -> None:
    assert SearchRequest.model_validate({"query": "x", "filters": None}).filters == Filters()
    answer = client.post("/v1/search", json={"query": "sunlight", "filters": None})
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["doc_id"] == "solar"
    result = call_tool("search", {"query": "sunlight", "filters": None})
    assert not result.is_error, tool_text(result)
    listed = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]["filters"]
    assert {"type": "null"} in listed["anyOf"]
    assert {"type": "null"} in listed_input_schemas()["search"]["properties"]["filters"]["anyOf"]


def test_the_openapi_document_still_types_the_strict_fields(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    search = schemas["SearchRequest"]["properties"]
    assert search["top_n"]["type"] == "integer"
    assert search["explain"]["type"] == "boolean"
    assert {"type": "boolean"} in search["collapse"]["anyOf"]
    assert {"additionalProperties": {"type": "number"}, "type": "object"} in search["weights"]["anyOf"]
    assert schemas["Filters"]["properties"]["include_draft"]["type"] == "boolean"
    assert {"type": "string", "format": "date-time"} in schemas["Filters"]["properties"]["modified_after"]["anyOf"]
    mcp = listed_input_schemas()["search"]["properties"]
    assert mcp["top_n"]["type"] == "integer" and mcp["explain"]["type"] == "boolean"


class ClosableEmbedder(HashingEmbedder):
    def close(self) -> None:
        pass


def test_the_cli_options_still_give_typed_values(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from esbridge.cli import main

    monkeypatch.setattr("esbridge.cli.search.open_query_embedder", lambda settings: (ClosableEmbedder(), None))
    args = ["search", "sunlight", "--top-n", "2", "--explain", "--no-graph", "--collapse", "--group"]
    args += ["--weights", "bm25=1,knn=0.5", "--filter", "include_draft=yes", "--filter", "include_disabled=0"]
    args += ["--json", "--engine", "embedded", "--index", "notes"]
    answered = CliRunner().invoke(main, args)
    assert answered.exit_code == 0, answered.output
    answer = json.loads(answered.stdout)
    assert len(answer["results"]) == 2 and answer["results"][0]["doc_id"] == "solar"
    assert answer["results"][0]["explain"]["retrievers"]
