"""Registry records that clash with what the reader makes of others, or with the fields it computes: each is
named with its line (or kept under another key) rather than lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry


def test_a_record_whose_id_is_another_records_tool_is_refused_naming_both_lines(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "jira", "name": "Jira", "tools": [{"name": "open_issue", "description": "Open an issue"}]},
        {"id": "jira/tools/open_issue", "name": "A server whose id looks like a tool's"},
        {"id": "slack", "name": "Slack", "tools": [{"name": "post", "description": "Post a message"}]},
    ]
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    try:
        report = ingest(write_registry(tmp_path, records), engine=engine, manager=manager, embedder=embedder,
                        options=IngestOptions(source_format="registry", source="registry"))  # fmt: skip
        engine.refresh("registry")
        hits = engine.search("registry", {"size": 50}).hits
    finally:
        engine.close()
    assert report.failed == [
        {
            "id": "registry.jsonl:2",
            "reason": "document id 'jira/tools/open_issue' is already the id of tool 'open_issue' of record 'jira' "
            "(line 1); record skipped (change one of the ids)",
        }
    ]
    by_id = {hit.source["doc_id"]: hit.source for hit in hits}
    assert set(by_id) == {"jira", "jira/tools/open_issue", "slack", "slack/tools/post"}
    assert by_id["jira/tools/open_issue"]["entity_type"] == "tool"  # the tool, not the later record


def test_a_tool_id_an_earlier_record_holds_skips_its_server_naming_both_lines(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "jira/tools/open_issue", "name": "A server whose id looks like a tool's"},
        {"id": "jira", "name": "Jira", "tools": [{"name": "open_issue", "description": "Open an issue"}]},
    ]
    first, problem = read_registry(write_registry(tmp_path, records))
    assert isinstance(first, Document) and first.entity_type == "mcp_server"
    assert isinstance(problem, Problem) and (problem.line, problem.doc_id) == (2, "jira")
    assert problem.reason == (
        "document id 'jira/tools/open_issue' is already the id of record 'jira/tools/open_issue' (line 1); record "
        "skipped (change one of the ids)"
    )


def test_a_field_the_reader_computes_that_the_record_gives_is_kept_under_another_key(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "s", "name": "S", "tool_count": 99, "tools": [{"name": "x"}]},
        {"id": "a", "name": "A", "skill_records": "see the card", "skills": [{"name": "Book"}]},
        {"id": "t", "name": "T", "tool_count": 1, "tools": [{"name": "x"}]},  # what esbridge computes: no warning
    ]
    server, _, agent, _, again, _ = read_registry(write_registry(tmp_path, records))
    assert isinstance(server, Document) and isinstance(agent, Document) and isinstance(again, Document)
    assert (server.metadata["tool_count"], server.metadata["given_tool_count"]) == (1, 99)
    assert server.warnings == (
        "metadata key 'tool_count' holds the number of the record's tools, which esbridge computes; the value given "
        "is kept as 'given_tool_count'",
    )
    assert agent.metadata["given_skill_records"] == "see the card"
    assert agent.metadata["skill_records"] == [{"name": "Book"}]
    assert again.metadata == {"tool_count": 1} and again.warnings == ()


def test_a_record_with_neither_id_nor_path_is_refused_saying_both_are_missing(tmp_path: Path) -> None:
    (problem,) = read_registry(write_registry(tmp_path, [{"name": "No id", "description": "x"}]))
    assert isinstance(problem, Problem) and problem.line == 1
    assert problem.reason == "field 'id' is missing, and there is no 'path' to stand in for it"


def test_a_blank_tool_name_is_refused_naming_the_line_and_field(tmp_path: Path) -> None:
    path = write_registry(
        tmp_path, [{"id": "ok", "name": "Ok"}, {"id": "jira", "name": "Jira", "tools": ["search", "  "]}]
    )
    found = list(read_registry(path))
    assert [doc.doc_id for doc in found if isinstance(doc, Document)] == ["ok"]
    problem = next(item for item in found if isinstance(item, Problem))
    assert problem.line == 2
    assert problem.reason == "field 'tools[1].name': a tool name must not be blank, got '  '"


def test_is_enabled_null_counts_as_absent_like_null_tags_tools_and_metadata(tmp_path: Path) -> None:
    record = {"id": "jira", "name": "Jira", "is_enabled": None, "tags": None, "tools": None, "metadata": None}
    path = write_registry(tmp_path, [record, {"id": "card", "name": "Card", "isEnabled": None}])
    found = list(read_registry(path))
    assert [(doc.doc_id, doc.status) for doc in found if isinstance(doc, Document)] == [("jira", None), ("card", None)]
    assert not [item for item in found if isinstance(item, Problem)]


def test_a_blank_skill_or_record_name_is_refused_naming_the_line_and_field_as_a_tool_name_is(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "travel", "name": "Travel", "skills": [{"name": "Book"}, {"name": " \t"}]},
        {"id": "helper", "name": "Helper", "skills": [{"id": "s1", "name": "\u200b\x07"}]},
        {"id": "blank", "name": "  "},
        {"id": "ok", "name": "Ok", "skills": [{"name": "Plan"}, "Book"]},  # a skill given as its name, as a tool may be
    ]
    found = list(read_registry(write_registry(tmp_path, records)))
    assert [doc.doc_id for doc in found if isinstance(doc, Document)] == ["ok", "ok/skills/Plan", "ok/skills/Book"]
    assert next(doc for doc in found if isinstance(doc, Document)).metadata["skill_records"] == [
        {"name": "Plan"},
        {"name": "Book"},
    ]
    assert [(item.line, item.doc_id, item.reason) for item in found if isinstance(item, Problem)] == [
        (1, "travel", "field 'skills[1].name': a skill name must not be blank, got ' \\t'"),
        (2, "helper", "field 'skills[0].name': a skill name must not be blank, got '\\u200b\\x07'"),
        (3, "blank", "field 'name': a record name must not be blank, got '  '"),
    ]


def test_a_reingest_of_unchanged_records_does_not_repeat_their_warnings(tmp_path: Path) -> None:
    repeated = {"id": "jira", "name": "Jira", "tools": [{"name": "x", "description": "a"}, {"name": "x"}]}
    warning = "jira: tool name 'x' is repeated with other content: the repeat is 'x~2'"
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")

    def run(records: list[dict[str, Any]]) -> list[str]:
        report = ingest(
            write_registry(tmp_path, records), engine=engine, manager=manager, embedder=embedder, options=options
        )
        assert report.failed == []
        return report.warnings

    try:
        assert run([repeated, {"id": "ok", "name": "Ok"}]) == [warning]
        assert run([repeated, {"id": "ok", "name": "Ok"}]) == [
            "1 warning(s) about 1 document(s) unchanged since they were indexed are not repeated"
        ]
        assert run([{**repeated, "description": "changed"}, {"id": "ok", "name": "Ok"}]) == [warning]
    finally:
        engine.close()


def test_a_tool_or_skill_name_with_spaces_at_either_end_is_stripped_with_a_warning(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "s1", "name": "S1", "tools": [" search ", {"name": "fetch\t", "description": "Fetch a page"}]},
        {"id": "a1", "name": "A1", "skills": [{"name": " Book", "description": "Book a flight"}]},
    ]
    found = list(read_registry(write_registry(tmp_path, records)))
    docs = {doc.doc_id: doc for doc in found if isinstance(doc, Document)}
    assert set(docs) == {"s1", "s1/tools/search", "s1/tools/fetch", "a1", "a1/skills/Book"}
    assert (docs["s1/tools/search"].title, docs["s1/tools/search"].metadata["tool_name"]) == ("search", "search")
    assert docs["a1/skills/Book"].metadata["skill_name"] == "Book"
    assert docs["s1"].warnings == (
        "tool name ' search ' has spaces at either end: stored as 'search'",
        "tool name 'fetch\\t' has spaces at either end: stored as 'fetch'",
    )
    assert docs["a1"].warnings == ("skill name ' Book' has spaces at either end: stored as 'Book'",)


def test_a_name_that_differs_from_another_only_by_outer_spaces_is_the_same_tool(tmp_path: Path) -> None:
    records = [{"id": "s1", "name": "S1", "tools": ["search", " search"]}]
    server, tool = read_registry(write_registry(tmp_path, records))
    assert isinstance(server, Document) and isinstance(tool, Document) and tool.doc_id == "s1/tools/search"
    assert server.warnings[-1] == "tool 'search' is listed twice, identically: kept once"


def test_registry_metadata_over_64_kib_is_refused_as_a_jsonl_records_is_and_the_indexed_record_kept(
    tmp_path: Path,
) -> None:
    server = {"id": "jira", "name": "Jira", "tools": [{"name": "open_issue", "description": "Open an issue"}]}
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    options = IngestOptions(source_format="registry", source="registry")
    try:
        ingest(write_registry(tmp_path, [server]), engine=engine, manager=manager, embedder=embedder, options=options)
        fat = {**server, "readme": "x" * 70_000}
        report = ingest(
            write_registry(tmp_path, [fat]), engine=engine, manager=manager, embedder=embedder, options=options
        )
        engine.refresh("registry")
        kept = {hit.source["doc_id"]: hit.source for hit in engine.search("registry", {"size": 50}).hits}
    finally:
        engine.close()
    assert report.failed == [
        {
            "id": "registry.jsonl:1",
            "reason": "record 'jira': metadata (its fields that are not record fields, and 'metadata') is 68.4 KiB as "
            "JSON, over the 64 KiB a record may store (each of its chunks stores a copy); record skipped",
        }
    ]
    assert set(kept) == {"jira", "jira/tools/open_issue"} and "readme" not in kept["jira"]["metadata"]


def test_a_record_whose_id_is_another_agents_skill_is_refused_naming_the_skill(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "travel", "name": "Travel", "skills": [{"name": "Book", "description": "Book a flight"}]},
        {"id": "travel/skills/Book", "name": "A server whose id looks like a skill's"},
    ]
    *_, problem = read_registry(write_registry(tmp_path, records))
    assert isinstance(problem, Problem) and problem.reason == (
        "document id 'travel/skills/Book' is already the id of skill 'Book' of record 'travel' (line 1); "
        "record skipped (change one of the ids)"
    )


def test_a_record_id_with_outer_spaces_is_stripped_with_a_warning_as_a_name_is(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": " jira ", "name": "Jira", "tools": ["search"]},
        {"path": "/slack\t", "name": "Slack"},  # the id defaults to the path
        {"id": "ok", "name": "Ok"},
    ]
    found = [doc for doc in read_registry(write_registry(tmp_path, records)) if isinstance(doc, Document)]
    assert [doc.doc_id for doc in found] == ["jira", "jira/tools/search", "/slack", "ok"]
    assert [doc.warnings for doc in found if doc.entity_type != "tool"] == [
        ("id ' jira ' has spaces at either end: stored as 'jira'",),
        # Named as written: the record has no 'id'.
        (
            "path '/slack\\t', standing in for the missing 'id', has spaces at either end: the id and the path are "
            "stored as '/slack'",
        ),
        (),
    ]


def test_a_jsonl_record_id_with_outer_spaces_is_stripped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"id": "note-1 ", "title": "A note", "text": "words"}) + "\n", encoding="utf-8")
    [doc] = list(read_jsonl(path))
    assert isinstance(doc, Document) and doc.doc_id == "note-1"
    assert doc.warnings == ("id 'note-1 ' has spaces at either end: stored as 'note-1'",)
