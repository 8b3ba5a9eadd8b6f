"""search_type and preference as request parameters, from the [search] settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from esbridge.config import load_settings
from esbridge.config.search import SearchSettings
from esbridge.engines.responses import msearch_lines
from esbridge.engines.routing import SearchRouting, preference_for

BODY = {"query": {"match": {"body": "solar"}}, "size": 10}


def test_defaults_pin_copies_per_request_and_gather_statistics_first() -> None:
    routing = SearchRouting(SearchSettings())
    params = routing.params(BODY)
    assert set(params) == {"preference", "search_type"} and params["search_type"] == "dfs_query_then_fetch"
    assert params == routing.params({"size": 10, "query": {"match": {"body": "solar"}}})  # key order is irrelevant
    assert params != routing.params({**BODY, "size": 11})
    assert SearchRouting(SearchSettings()).params(BODY) == params  # the same for every client and process


def test_query_then_fetch_sends_no_search_type() -> None:
    params = SearchRouting(SearchSettings(search_type="query_then_fetch", preference="engine")).params(BODY)
    assert params == {}


def test_a_session_preference_is_one_per_client() -> None:
    first, second = (
        SearchRouting(SearchSettings(preference="session")),
        SearchRouting(SearchSettings(preference="session")),
    )
    assert first.params(BODY) == first.params({"size": 1})
    assert first.params(BODY) != second.params(BODY)


def test_named_and_custom_preferences_pass_through() -> None:
    assert preference_for("_local", BODY, "s") == "_local"
    assert preference_for("tenant-42", BODY, "s") == "tenant-42"
    assert preference_for("engine", BODY, "s") is None
    assert not str(preference_for("query", BODY, "s")).startswith("_")


def test_msearch_headers_carry_the_parameters() -> None:
    routing = SearchRouting(SearchSettings(search_type="dfs_query_then_fetch", preference="session"))
    header, body = msearch_lines("notes", [BODY], header=routing.params)
    assert header == {"index": "notes", **routing.params(BODY)} and body == BODY


def test_settings_come_from_the_environment_and_refuse_unknown_search_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_SEARCH__SEARCH_TYPE", "dfs_query_then_fetch")
    monkeypatch.setenv("ESBRIDGE_SEARCH__PREFERENCE", "session")
    settings = load_settings()
    assert (settings.search.search_type, settings.search.preference) == ("dfs_query_then_fetch", "session")
    with pytest.raises(ValidationError):
        SearchSettings(search_type="scan")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "body",
    [
        {"knn": {"field": "vector", "k": 10}},
        {"retriever": {"rrf": {"retrievers": []}}},
        {"query": {"hybrid": {"queries": [{"match": {"body": "solar"}}]}}},
    ],
)
def test_no_search_type_goes_with_bodies_that_refuse_or_break_under_dfs(body: dict[str, object]) -> None:
    routing = SearchRouting(SearchSettings(search_type="dfs_query_then_fetch"))
    assert "search_type" not in routing.params(body)
    assert routing.params(BODY)["search_type"] == "dfs_query_then_fetch"
