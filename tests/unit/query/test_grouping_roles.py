"""Grouped answers of an index esbridge did not write, read through its field map, and the grouping's own
request under the search's time, on the embedded engine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from esbridge.config.fields import FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import BulkAction, SearchResult
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher

PROPERTIES = {name: {"type": "text"} for name in ("name", "text")} | {
    name: {"type": "keyword"} for name in ("kind", "server", "owner")
}
# A catalogue whose type field is "kind" and whose tools name their server in "server" (skills their agent in
# "owner"): none of them where esbridge writes them (entity_type, metadata.server_id, metadata.agent_id).
CATALOG: dict[str, dict[str, Any]] = {
    "jira": {"name": "Jira", "text": "jira tracker server", "kind": "mcp_server"},
    "create": {"name": "create_issue", "text": "create a jira issue in the tracker", "kind": "tool", "server": "jira"},
    "book": {"name": "Book flight", "text": "book a flight ticket", "kind": "skill", "owner": "travel"},
    "travel": {"name": "Travel", "text": "holiday planning", "kind": "a2a_agent"},
    "n1": {"name": "note", "text": "a note on an issue of a magazine", "kind": "note"},
    "n2": {"name": "other", "text": "unrelated words entirely", "kind": "note"},
}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "db")
    engine.create_index("catalog", {"mappings": {"properties": PROPERTIES}})
    engine.bulk("catalog", [BulkAction(op="index", id=key, document=doc) for key, doc in CATALOG.items()])
    engine.refresh("catalog")
    yield engine
    engine.close()


def search(engine: EmbeddedEngine, fields: FieldMap, query: str) -> SearchResponse:
    searcher = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "catalog", None, fields=fields)
    return asyncio.run(searcher.search(SearchRequest(query=query, top_n=5, group=True)))


def catalog(**roles: Any) -> FieldMap:
    return FieldMap(text={"name": 1.0, "text": 1.0}, content=["text"], **roles)


def test_an_attached_index_is_grouped_through_its_type_title_and_parent_fields(engine: EmbeddedEngine) -> None:
    response = search(engine, catalog(title="name", type="kind", parent="server"), "create jira issue tracker")
    assert response.warnings == [] and response.groups is not None
    [tool] = response.groups.tools
    assert (tool.tool_name, tool.server_id) == ("create_issue", "jira")
    jira = next(server for server in response.groups.servers if server.id == "jira")
    assert (jira.name, [match.tool_name for match in jira.matching_tools]) == ("Jira", ["create_issue"])


def test_a_skill_of_an_attached_index_brings_its_agent_through_the_parent_field(engine: EmbeddedEngine) -> None:
    response = search(engine, catalog(title="name", type="kind", parent="owner"), "book a flight ticket")
    assert response.groups is not None
    [skill] = response.groups.skills
    assert (skill.id, skill.name, skill.agent_id) == ("book", "Book flight", "travel")
    assert [agent.id for agent in response.groups.agents] == ["travel"]


def test_a_role_grouping_needs_that_is_not_mapped_is_named_in_the_warnings(engine: EmbeddedEngine) -> None:
    untyped = search(engine, catalog(title="name"), "create jira issue tracker")
    assert untyped.groups is not None and untyped.groups.servers == [] and untyped.groups.tools == []
    assert untyped.results  # the answer itself stands
    assert untyped.warnings == [
        "nothing could be grouped: grouping reads each result's type, and [fields.catalog] maps no type field"
    ]
    unnamed = search(engine, catalog(type="kind", parent="server"), "create jira issue tracker")
    assert unnamed.warnings == [
        "grouped entries have no names (a tool shows its id): [fields.catalog] maps no title field"
    ]
    assert unnamed.groups is not None and [tool.tool_name for tool in unnamed.groups.tools] == ["create"]
    orphaned = search(engine, catalog(title="name", type="kind"), "create jira issue tracker")
    assert orphaned.groups is not None and orphaned.groups.tools == []
    assert orphaned.warnings == [
        "1 tool(s) and skill(s) are not grouped under a server or agent: their metadata names no server_id or "
        "agent_id, and [fields.catalog] maps no parent field"
    ]


class SlowIds(AsyncEmbeddedEngine):
    """The embedded engine, except that the grouping's ``ids`` request hangs (or fails)."""

    def __init__(self, engine: EmbeddedEngine, fail: Exception | None = None) -> None:
        super().__init__(engine=engine)
        self.fail = fail

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "ids" in body.get("query", {}):
            if self.fail is not None:
                raise self.fail
            await asyncio.sleep(30)
        return await super().search(index, body)


QUICK = PipelineSettings(bm25_timeout_s=1.0, knn_timeout_s=1.0, embed_timeout_s=1.0)


def test_the_grouping_request_has_what_is_left_of_the_search_time_and_a_timing(engine: EmbeddedEngine) -> None:
    fields = catalog(title="name", type="kind", parent="server")
    fast = search(engine, fields, "create jira issue tracker")
    assert fast.details.timings_ms["grouping"] > 0
    searcher = HybridSearcher(SlowIds(engine), "catalog", None, QUICK, fields=fields)
    slow = asyncio.run(searcher.search(SearchRequest(query="create jira issue tracker", top_n=5, group=True)))
    assert slow.took_ms < 3000 + 1000  # its 3 s (1 s embedding, 2 x 1 s retrieval), not the 30 s of the request
    assert [result.doc_id for result in slow.results] == [result.doc_id for result in fast.results]
    assert slow.groups is not None and [tool.tool_name for tool in slow.groups.tools] == ["create_issue"]
    [warning] = slow.warnings
    assert warning.startswith("grouped tools are shown without their descriptions as written and input schemas: ")
    assert warning.endswith("s left of the search's time")
    assert "grouping" in slow.details.timings_ms
