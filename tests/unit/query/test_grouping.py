"""Registry grouping over hand-made candidates: matching tools only, parents brought in, scores as results."""

from __future__ import annotations

from typing import Any

from esbridge.query.grouping import group


def tool(server: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"doc_id": f"{server}/tools/{name}", "entity_type": "tool", "title": name, "body": f"does {name}",
            "metadata": {"server_id": server, "server_path": f"/{server}", "tool_name": name, **extra}}  # fmt: skip


SOURCES: dict[str, dict[str, Any]] = {
    "jira#0": {"doc_id": "jira", "entity_type": "mcp_server", "title": "Jira", "path": "/jira"},
    "jira#1": {"doc_id": "jira", "entity_type": "mcp_server", "title": "Jira", "path": "/jira"},
    "jira/tools/create_issue#0": tool("jira", "create_issue", input_schema={"type": "object"}),
    "slack/tools/post_message#0": tool("slack", "post_message"),
    "dev#0": {"doc_id": "dev", "entity_type": "virtual_server", "title": "Dev tools", "path": "/dev"},
    "helper#0": {"doc_id": "helper", "entity_type": "a2a_agent", "title": "Helper"},
    "note#0": {"doc_id": "note", "title": "A note without a type"},
}
# jira/tools/search (a tool of jira that did not match) is not a candidate at all
SCORES = {
    "jira#1": 0.5,
    "jira#0": 0.4,
    "jira/tools/create_issue#0": 0.8,
    "slack/tools/post_message#0": 0.6,
    "dev#0": 0.2,
    "helper#0": 0.3,
    "note#0": 0.1,
}


def test_servers_carry_only_their_matching_tools_and_tools_bring_their_server() -> None:
    groups = group(SCORES, SOURCES, top_n=10)
    # scores are divided by the best candidate's (0.8), as results are
    assert [(s.id, s.score) for s in groups.servers] == [("jira", 1.0), ("slack", 0.6 / 0.8)]
    jira, slack = groups.servers
    assert [(t.tool_name, t.score) for t in jira.matching_tools] == [("create_issue", 1.0)]
    assert (jira.name, jira.path) == ("Jira", "/jira")
    assert (slack.name, slack.path, [t.tool_name for t in slack.matching_tools]) == (None, "/slack", ["post_message"])
    assert [(t.server_id, t.tool_name, t.score) for t in groups.tools] == [
        ("jira", "create_issue", 1.0),
        ("slack", "post_message", 0.6 / 0.8),
    ]
    # until the tool's record is read from its first chunk (grouped), its best chunk's text stands in
    assert groups.tools[0].description == "does create_issue"
    assert [(v.id, v.score) for v in groups.virtual_servers] == [("dev", 0.25)]
    assert [(a.id, a.score) for a in groups.agents] == [("helper", 0.3 / 0.8)]
    assert groups.skills == []


def test_every_list_is_cut_at_top_n() -> None:
    groups = group(SCORES, SOURCES, top_n=1)
    assert [s.id for s in groups.servers] == ["jira"] and len(groups.tools) == 1


def test_nothing_to_group() -> None:
    empty = group({}, {}, top_n=5)
    assert (empty.servers, empty.tools, empty.agents) == ([], [], [])


def test_scores_are_in_0_1_as_the_results_are_when_fusion_gives_negative_scores() -> None:
    # z-score fusion: below-mean candidates score below 0, and every candidate may; a tool scaled to 0 is no match
    mixed = group({"jira/tools/create_issue#0": 0.5, "slack/tools/post_message#0": -0.7}, SOURCES, top_n=10)
    assert [(t.tool_name, t.score) for t in mixed.tools] == [("create_issue", 1.0)]
    assert [s.id for s in mixed.servers] == ["jira"]
    negative = group({"jira#0": -0.2, "helper#0": -1.0, "dev#0": -0.6}, SOURCES, top_n=10)
    assert [(s.id, s.score) for s in negative.servers] == [("jira", 1.0)]
    assert [(v.id, v.score) for v in negative.virtual_servers] == [("dev", 0.5)]
    assert negative.agents == []  # the worst candidate, scaled to 0, is no match


def test_an_entry_min_max_fusion_scored_0_is_no_match_and_a_tool_brings_no_server() -> None:
    # Min-max fusion gives the last of a retriever's candidates 0, as it gives a document no retriever found:
    # listed, such a tool showed "0.000" under its server although nothing set it apart from a non-match.
    scores = {"jira#0": 0.6, "jira/tools/create_issue#0": 0.0, "slack/tools/post_message#0": 0.0, "dev#0": 0.3,
              "helper#0": 0.0}  # fmt: skip
    groups = group(scores, SOURCES, top_n=10)
    assert groups.tools == [] and groups.agents == []
    assert [(s.id, s.score, s.matching_tools) for s in groups.servers] == [("jira", 1.0, [])]
    assert [(v.id, v.score) for v in groups.virtual_servers] == [("dev", 0.5)]


def test_a_returned_entry_is_listed_with_its_score_of_0() -> None:
    # With few candidates the last one is returned at 0; the results show it, so the groups do too.
    scores = {"jira#0": 0.6, "jira/tools/create_issue#0": 0.0, "slack/tools/post_message#0": 0.0, "helper#0": 0.0}
    returned = ["jira#0", "jira/tools/create_issue#0", "helper#0"]
    groups = group(scores, SOURCES, top_n=10, returned=returned)
    [jira] = groups.servers  # slack's tool, at 0 and not returned, brings nothing in
    assert (jira.id, jira.score, [(t.tool_name, t.score) for t in jira.matching_tools]) == (
        "jira",
        1.0,
        [("create_issue", 0.0)],
    )
    assert [(t.tool_name, t.score) for t in groups.tools] == [("create_issue", 0.0)]
    assert [(a.id, a.score) for a in groups.agents] == [("helper", 0.0)]


def test_an_entry_below_the_results_floor_is_not_listed_unless_returned() -> None:
    # The results leave out what scales below [pipeline.shaping] floor; the groups do too, so a tool cut from the
    # results does not come back under its server.
    groups = group(SCORES, SOURCES, top_n=10, floor=0.6)
    assert [(t.tool_name, t.score) for t in groups.tools] == [("create_issue", 1.0), ("post_message", 0.6 / 0.8)]
    assert [s.id for s in groups.servers] == ["jira", "slack"]
    assert groups.virtual_servers == [] and groups.agents == []  # 0.25 and 0.375: below the floor
    kept = group(SCORES, SOURCES, top_n=10, floor=0.6, returned=["helper#0"])
    assert [(a.id, a.score) for a in kept.agents] == [("helper", 0.3 / 0.8)]
