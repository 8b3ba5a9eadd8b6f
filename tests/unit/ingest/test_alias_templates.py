"""Which index template an alias's next rollover makes its index from (``choose_alias_template``), from the
engines' answers: its write index, the next index's name, the composable template of highest priority, and the
refusals that name what was looked for. The engines' own answers are in
tests/integration/test_record_model_aliases.py."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge.engines.index_templates import (
    AliasTemplate,
    alias_write_index,
    choose_alias_template,
    engine_agrees,
    legacy_patterns,
    next_index_name,
)


def templates(*entries: tuple[str, list[str], int | None]) -> dict[str, Any]:
    listed = []
    for name, patterns, priority in entries:
        body: dict[str, Any] = {"index_patterns": patterns, "template": {}}
        if priority is not None:
            body["priority"] = priority
        listed.append({"name": name, "index_template": body})
    return {"index_templates": listed}


@pytest.mark.parametrize(
    ("write", "expected"),
    [("logs-000001", "logs-000002"), ("logs-2026.11.29-000009", "logs-2026.11.29-000010"), ("a-1", "a-000002")],
)
def test_the_next_index_is_named_as_a_rollover_counts_up(write: str, expected: str) -> None:
    assert next_index_name(write) == expected


def test_the_write_index_is_the_flagged_one_or_the_only_one_named_as_a_rollover_names_it() -> None:
    flagged = {"logs-000001": {"aliases": {"logs": {}}}, "logs-000002": {"aliases": {"logs": {"is_write_index": True}}}}
    assert alias_write_index(flagged, "logs") == "logs-000002"
    assert alias_write_index({"logs-000001": {"aliases": {"logs": {}}}}, "logs") == "logs-000001"
    assert alias_write_index({"logs-000001": {"aliases": {"logs": {"is_write_index": False}}}}, "logs") is None
    unflagged: dict[str, Any] = {"a-000001": {"aliases": {"logs": {}}}, "b-000001": {"aliases": {"logs": {}}}}
    assert alias_write_index(unflagged, "logs") is None
    assert alias_write_index({"notes-v2": {"aliases": {"notes": {}}}}, "notes") is None  # no rollover names it


def test_the_template_of_highest_priority_matching_the_next_index_is_chosen() -> None:
    answer = templates(("all", ["*"], None), ("logs", ["logs-*"], 100), ("old", ["logs-00000*"], 50))
    chosen = choose_alias_template("logs", "logs-000001", answer, {})
    assert (chosen.template, chosen.next_index, chosen.refusal) == ("logs", "logs-000002", None)


def test_the_next_name_not_the_write_index_is_matched() -> None:
    answer = templates(("first", ["logs-000001"], 10), ("rest", ["logs-0000*"], 5))
    assert choose_alias_template("logs", "logs-000001", answer, {}).template == "rest"


def test_no_matching_template_is_refused_naming_what_was_looked_for() -> None:
    chosen = choose_alias_template("logs", "logs-000001", templates(("other", ["metrics-*"], 1)), {})
    assert chosen.template is None and not chosen.matched
    assert chosen.refusal == (
        "no composable index template (GET _index_template) matches the next index of alias logs (logs-000002, "
        "rolled over from write index logs-000001)"
    )


def test_legacy_templates_are_named_not_chosen() -> None:
    legacy = legacy_patterns(
        {"logs-b": {"index_patterns": ["logs-*"], "order": 2}, "logs-a": {"index_patterns": ["l*"]}}
    )
    chosen = choose_alias_template("logs", "logs-000001", templates(), legacy)
    assert chosen.template is None and chosen.matched
    assert "legacy templates (GET _template) do: logs-a, logs-b, which the engine merges by order" in str(
        chosen.refusal
    )


def test_templates_of_one_priority_are_refused_as_ambiguous() -> None:
    answer = templates(("a", ["logs-*"], 7), ("b", ["logs-0*"], 7), ("c", ["*"], 0))
    chosen = choose_alias_template("logs", "logs-000001", answer, {})
    assert chosen.template is None and chosen.matched
    assert str(chosen.refusal).startswith("index templates a, b all match the next index of alias logs (logs-000002")
    assert str(chosen.refusal).endswith("with priority 7: which one makes it is ambiguous")


def test_a_template_matching_every_index_is_refused() -> None:
    chosen = choose_alias_template("logs", "logs-000001", templates(("defaults", ["*"], 0)), {})
    assert chosen.template is None and chosen.matched
    assert "index template defaults makes the next index of alias logs (logs-000002" in str(chosen.refusal)
    assert "it matches every index (*)" in str(chosen.refusal)
    assert '(index_patterns ["logs-*"], a higher priority)' in str(chosen.refusal)


CHOSEN = AliasTemplate("logs-000001", "logs-000002", "logs")


def test_the_engine_simulating_the_next_index_from_the_chosen_template_keeps_it() -> None:
    simulated = {"template": {"mappings": {}}, "overlapping": [{"name": "defaults", "index_patterns": ["*"]}]}
    assert engine_agrees(CHOSEN, simulated) == CHOSEN


@pytest.mark.parametrize(
    "simulated", [{"template": {"mappings": {}}, "overlapping": [{"name": "logs", "index_patterns": ["logs-*"]}]}, {}]
)
def test_an_engine_that_would_make_the_next_index_otherwise_is_refused_naming_it(simulated: dict[str, Any]) -> None:
    refused = engine_agrees(CHOSEN, simulated)
    assert refused.template is None and refused.matched
    assert str(refused.refusal).startswith(
        "index template logs is the one of highest priority whose index_patterns match logs-000002, the next index "
        "of the alias, but POST _index_template/_simulate_index/logs-000002 does not make it from that template"
    )
