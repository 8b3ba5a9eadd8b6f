from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from esbridge.ingest.jsonl import TOOLS_HEADING, read_jsonl
from esbridge.ingest.model import Document, Problem, Section

UTC = timezone.utc

# One line per entry; the comment is the line number, which is what each Problem must report.
MIXED_LINES = [
    b'{"id": "a", "title": "A", "text": "Alpha body", "links": ["b", "zzz", "a", "b", 7], "tags": ["x", " x ", "y"],'
    b' "aliases": ["Alef"], "modified_at": "2024-05-01T10:00:00Z", "created_at": 1714557600, "entity_type": "note",'
    b' "status": "draft", "category": "greek", "metadata": {"k": {"n": 1}}, "source": "wiki"}',  # 1
    b"   ",  # 2: blank, skipped silently
    b'{"id": "b", "title": "B", "text": "Body of B", "created_at": 1714557600000,'
    b' "modified_at": "2024-05-01T12:00:00+02:00"}',  # 3
    b'{"id": "c", "title": ',  # 4: truncated JSON
    b'{"id": "d", "text": "caf\xe9"}',  # 5: Latin-1 byte, not UTF-8
    b'{"id": "e", "tags": 5}',  # 6
    b'{"title": "no id"}',  # 7
    b'{"id": "", "text": "x"}',  # 8
    b'{"id": true}',  # 9
    b'{"id": "f", "text": 42}',  # 10
    b"[1, 2]",  # 11
    b'{"id": "g", "text": "bad \\ud800 here"}',  # 12: escape of a lone surrogate
    b'{"id": "b", "text": "again"}',  # 13: duplicate of line 3
    b'{"id": 7, "name": "GitHub MCP", "description": "Work with GitHub.", "entity_type": "mcp_server",'
    b' "tags": "github", "metadata": {"vendor": "GitHub", "transport": ["stdio", "http"]},'
    b' "tools": [{"name": "create_issue", "description": "Open an\\n issue"}, "search_code"], "version": "1.2"}',  # 14
    b'{"id": "h", "modified_at": "not a date"}',  # 15
    b'{"id": "i", "tools": [{"description": "x"}]}',  # 16
    b'{"id": "j", "text": "crlf"}\r',  # 17: CRLF line end
    b'{"id": "k", "title": "K", "links": [1.5]}',  # 18
    b'{"id": "l", "title": "L", "metadata": [1]}',  # 19, no newline at the end of the file
]


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines))
    return path


def read_all(path: Path) -> tuple[dict[str, Document], dict[int, str]]:
    documents: dict[str, Document] = {}
    problems: dict[int, str] = {}
    for item in read_jsonl(path):
        if isinstance(item, Problem):
            assert item.source == path.name
            assert item.line is not None
            problems[item.line] = item.reason
        else:
            documents[item.doc_id] = item
    return documents, problems


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[dict[str, Document], dict[int, str]]:
    return read_all(write_lines(tmp_path / "records.jsonl", MIXED_LINES))


def test_every_valid_record_comes_out_in_order(tmp_path: Path) -> None:
    items = list(read_jsonl(write_lines(tmp_path / "records.jsonl", MIXED_LINES)))
    ids = [item.doc_id for item in items if isinstance(item, Document)]
    assert ids == ["a", "b", "7", "j"]
    assert len(items) == 4 + 14  # 19 lines, one blank


def test_each_bad_line_is_a_problem_naming_line_and_reason(mixed: tuple[dict[str, Document], dict[int, str]]) -> None:
    _, problems = mixed
    assert sorted(problems) == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 18, 19]
    assert problems[4] == "invalid JSON: Expecting value at the end of the line (column 22)"
    assert problems[5] == "invalid UTF-8: byte 0xe9 at byte offset 24 of the line (invalid continuation byte)"
    assert problems[6] == "field 'tags': Input should be a valid list, got number 5"
    assert problems[7] == "field 'id' is missing"
    assert problems[8] == "field 'id': must not be empty"
    assert problems[9] == "field 'id': must be a non-empty string or an integer, got true"
    assert problems[10] == "field 'text': Input should be a valid string, got number 42"
    assert problems[11] == "expected a JSON object, got array"
    assert problems[12] == "field 'text': unpaired UTF-16 surrogate escape in a string"
    assert problems[13] == "duplicate id 'b' (first on line 3); record skipped"
    assert problems[15].startswith("field 'modified_at': Input should be a valid datetime")
    assert problems[15].endswith("got string 'not a date'")
    assert problems[16] == "field 'tools[0].name' is missing"
    assert problems[18] == "field 'links[0]': a link target must be a non-empty string or an integer, got number 1.5"
    assert problems[19] == "field 'metadata': Input should be a valid dictionary, got array"


def test_problems_name_the_record_when_its_id_is_intact(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "records.jsonl", [*MIXED_LINES, b'{"id": "caf\xe9", "text": "t"}'])
    doc_ids = {item.line: item.doc_id for item in read_jsonl(path) if isinstance(item, Problem)}
    assert doc_ids == {
        4: None,  # JSON that does not parse: no id is certain
        5: "d",  # the bad byte is in the text, not in the id
        6: "e",
        7: None,
        8: None,
        9: None,
        10: "f",
        11: None,
        12: "g",
        13: "b",
        15: "h",
        16: "i",
        18: "k",
        19: "l",
        20: None,  # the bad byte is in the id
    }


def test_a_full_record_maps_onto_the_document(mixed: tuple[dict[str, Document], dict[int, str]]) -> None:
    documents, _ = mixed
    assert documents["a"] == Document(
        doc_id="a",
        title="A",
        sections=(Section("Alpha body"),),
        tags=("x", "y"),
        aliases=("Alef",),
        links=("b", "7"),  # deduplicated, self-link dropped; 7 is an integer id of the same file
        entity_type="note",
        status="draft",
        category="greek",
        created_at=datetime(2024, 5, 1, 10, 0, tzinfo=UTC),  # epoch seconds 1714557600
        modified_at=datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
        metadata={"source": "wiki", "k": {"n": 1}, "unresolved_links": ["zzz"]},
    )


def test_epoch_milliseconds_and_offsets_become_utc(mixed: tuple[dict[str, Document], dict[int, str]]) -> None:
    documents, _ = mixed
    assert documents["b"].created_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)  # 1714557600000 ms
    assert documents["b"].modified_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)  # 12:00+02:00
    assert documents["b"].modified_at is not None
    assert documents["b"].modified_at.tzinfo == UTC


def test_an_entity_record_composes_its_text_from_fields_and_tools(
    mixed: tuple[dict[str, Document], dict[int, str]],
) -> None:
    documents, _ = mixed
    server = documents["7"]
    assert server.title == "GitHub MCP"  # from "name"
    assert server.entity_type == "mcp_server"
    assert server.tags == ("github",)  # one string is one tag
    assert server.metadata == {
        "version": "1.2",
        "vendor": "GitHub",
        "transport": ["stdio", "http"],
        "tool_records": [{"name": "create_issue", "description": "Open an\n issue"}, {"name": "search_code"}],
    }
    assert server.sections == (
        Section("Work with GitHub."),
        Section("Tags: github\nversion: 1.2\nvendor: GitHub\ntransport: stdio, http"),
        Section("create_issue: Open an issue\nsearch_code", headings=(TOOLS_HEADING,)),
    )


def test_records_with_text_keep_fields_out_of_it_but_still_list_tools(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            b'{"id": "s", "title": "Server", "name": "srv", "description": "Short.", "text": "Long prose.",'
            b' "tags": ["t"], "metadata": {"k": "v"}, "tools": [{"name": "run", "description": "Runs", "x": 1}]}'
        ],
    )
    (document,) = read_jsonl(path)
    assert isinstance(document, Document)
    assert document.title == "Server"
    # the name that is not the title is kept, and so is every field of a tool, as given
    assert document.metadata == {
        "k": "v",
        "name": "srv",
        "tool_records": [{"name": "run", "description": "Runs", "x": 1}],
    }
    assert document.sections == (Section("Short."), Section("Long prose."), Section("run: Runs", headings=("Tools",)))


def test_a_field_that_metadata_gives_another_value_is_a_warning_not_a_silent_loss(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            b'{"id": "s", "title": "Server", "name": "srv", "vendor": "Acme", "tier": 2, "text": "t",'
            b' "metadata": {"vendor": "Acme Corp", "name": "server", "tier": 2}}'
        ],
    )
    (document,) = read_jsonl(path)
    assert isinstance(document, Document)
    assert document.metadata == {"vendor": "Acme Corp", "name": "server", "tier": 2}
    assert document.warnings == (
        "field 'vendor' is given at the top level (string 'Acme') and in metadata (string 'Acme Corp'); the value "
        "in metadata is kept, the other is not indexed",
        "field 'name' is given at the top level (string 'srv') and in metadata (string 'server'); the value in "
        "metadata is kept, the other is not indexed",
    )


def test_null_means_absent_and_an_empty_record_gets_a_warning(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [b'{"id": 1, "title": null, "text": null, "tags": null, "links": null, "metadata": null, "tools": null}'],
    )
    (document,) = read_jsonl(path)
    assert isinstance(document, Document)
    assert (document.doc_id, document.title, document.sections, document.tags) == ("1", "", (), ())
    assert document.warnings == ("record has neither title nor text",)


def test_metadata_over_the_cap_fails_its_line_naming_the_record_and_size_and_the_others_land(
    tmp_path: Path,
) -> None:
    cap = 64 * 1024  # jsonl.MAX_METADATA_BYTES
    big = "x" * cap
    path = write_lines(
        tmp_path / "fat.jsonl",
        [
            b'{"id": "before", "text": "t"}',
            json.dumps({"id": "fat", "text": "t", "metadata": {"blob": big}}).encode(),
            json.dumps({"id": "wide", "text": "t", "blob": big}).encode(),  # a top-level field is metadata too
            json.dumps({"id": "just-under", "text": "t", "metadata": {"b": "x" * (cap - 20)}}).encode(),
            b'{"id": "after", "text": "t"}',
        ],
    )
    items = list(read_jsonl(path))
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["before", "just-under", "after"]
    problems = {item.line: item for item in items if isinstance(item, Problem)}
    assert list(problems) == [2, 3]
    for line, doc_id in ((2, "fat"), (3, "wide")):
        assert problems[line].doc_id == doc_id, "what was indexed for the record is kept"
        assert problems[line].reason.startswith(f"record {doc_id!r}: metadata ")
        assert "64.0 KiB as JSON, over the 64 KiB a record may store" in problems[line].reason


def test_links_resolve_against_the_ids_of_the_file(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "links.jsonl",
        [
            b'{"id": "p", "text": "t", "links": ["q", "broken", "later", "unreadable"]}',
            b'{"id": "broken", "tags": 1}',
            b'{"id": "unreadable", "text": ',
            b'{"id": "later", "text": "t"}',
        ],
    )
    documents, problems = read_all(path)
    # A forward link resolves too; so does one to a line whose id can be read (what was indexed for it is
    # kept), but not to one whose id cannot.
    assert documents["p"].links == ("broken", "later")
    assert documents["p"].metadata == {"unresolved_links": ["q", "unreadable"]}
    assert list(problems) == [2, 3]


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "p", "text": "t", "links": ["gone"], "metadata": {"unresolved_links": ["mine"]}}',
        b'{"id": "p", "text": "t", "links": ["gone"], "unresolved_links": ["mine"]}',
    ],
)
def test_a_records_own_unresolved_links_are_kept_under_another_key_with_a_warning(tmp_path: Path, line: bytes) -> None:
    (document,) = read_jsonl(write_lines(tmp_path / "r.jsonl", [line]))
    assert isinstance(document, Document)
    assert document.metadata == {"given_unresolved_links": ["mine"], "unresolved_links": ["gone"]}
    assert document.warnings == (
        "metadata key 'unresolved_links' holds the links that name no record, which esbridge computes; the value "
        "given is kept as 'given_unresolved_links'",
    )


def test_a_record_written_back_with_the_unresolved_links_esbridge_computed_is_unchanged(tmp_path: Path) -> None:
    # A client that reads a document and upserts it again sends the computed key back: no given_ copy, no warning.
    line = b'{"id": "p", "text": "t", "links": ["gone"], "metadata": {"unresolved_links": ["gone"]}}'
    (document,) = read_jsonl(write_lines(tmp_path / "r.jsonl", [line]))
    assert isinstance(document, Document)
    assert (document.metadata, document.warnings) == ({"unresolved_links": ["gone"]}, ())


def test_a_record_written_back_after_its_links_resolved_says_none_is_unresolved(tmp_path: Path) -> None:
    # "gone" exists now: the record's old unresolved_links stayed as they were, claiming a link that resolves.
    lines = [
        b'{"id": "p", "text": "t", "links": [{"id": "gone", "weight": 0.5}], '
        b'"metadata": {"unresolved_links": ["gone"], "unresolved_link_weights": {"gone": 0.5}}}',
        b'{"id": "gone", "text": "back"}',
    ]
    documents = {doc.doc_id: doc for doc in read_jsonl(write_lines(tmp_path / "r.jsonl", lines))}
    assert isinstance(documents["p"], Document)
    assert documents["p"].links == ("gone",)
    assert documents["p"].metadata == {
        "given_unresolved_links": ["gone"],
        "given_unresolved_link_weights": {"gone": 0.5},
        "unresolved_links": [],
        "unresolved_link_weights": {},
    }
    # Written back once more, as read: nothing moves again.
    again = {**json.loads(lines[0]), "metadata": documents["p"].metadata}
    lines[0] = json.dumps(again).encode()
    (document, _) = read_jsonl(write_lines(tmp_path / "again.jsonl", lines))
    assert isinstance(document, Document)
    assert (document.metadata, document.warnings) == (documents["p"].metadata, ())


def test_a_record_that_names_no_unresolved_links_gets_none_written(tmp_path: Path) -> None:
    (document,) = read_jsonl(write_lines(tmp_path / "r.jsonl", [b'{"id": "p", "text": "t", "links": ["p"]}']))
    assert isinstance(document, Document)
    assert document.metadata == {}


def test_a_beir_corpus_line_is_told_apart_from_a_record_without_id(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "d1", "title": "T", "text": "x"}\n{"title": "no id at all"}\n', encoding="utf-8")
    beir_line, no_id = list(read_jsonl(path))
    assert isinstance(beir_line, Problem) and isinstance(no_id, Problem)
    assert beir_line.reason.startswith("field 'id' is missing; the record has '_id', as a line of a BEIR corpus")
    assert "corpus.jsonl" in beir_line.reason
    assert no_id.reason == "field 'id' is missing"


def test_a_date_past_the_last_datetime_once_in_utc_fails_its_record_alone(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        '{"id": "far", "modified_at": "9999-12-31T23:59:59-05:00"}',
        '{"id": "early", "created_at": "0001-01-01T00:00:00+05:00"}',
        '{"id": "fine", "modified_at": "2026-11-27T06:00:00-05:00"}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = list(read_jsonl(path))
    problems = [item for item in items if isinstance(item, Problem)]
    assert [problem.doc_id for problem in problems] == ["far", "early"]
    assert "9999-12-31T23:59:59-05:00 lies outside the dates" in problems[0].reason
    documents = [item for item in items if isinstance(item, Document)]
    assert [(doc.doc_id, doc.modified_at) for doc in documents] == [
        ("fine", datetime(2026, 11, 27, 11, 0, tzinfo=timezone.utc))
    ]


def test_a_year_or_a_month_is_its_first_day_not_an_epoch_in_1970(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        '{"id": "year", "created_at": 2024, "modified_at": "2025"}',
        '{"id": "month", "created_at": "2024-05", "modified_at": " 2025-12 "}',
        '{"id": "epoch", "created_at": 1714557600, "modified_at": "1714557600"}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = list(read_jsonl(path))
    assert all(isinstance(item, Document) for item in items), items
    dates = {doc.doc_id: (doc.created_at, doc.modified_at) for doc in items if isinstance(doc, Document)}
    assert dates == {
        "year": (datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)),
        "month": (datetime(2024, 5, 1, tzinfo=UTC), datetime(2025, 12, 1, tzinfo=UTC)),
        "epoch": (datetime(2024, 5, 1, 10, 0, tzinfo=UTC), datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    }


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("created_at", '"0000"', "field 'created_at': '0000' is written as a year or a year and month, but there"),
        ("modified_at", '"0000-05"', "field 'modified_at': '0000-05' is written as a year or a year and month"),
        ("created_at", '"2024-13"', "field 'created_at': '2024-13' is written as a year or a year and month"),
        ("modified_at", "1e20", "field 'modified_at': 1e+20 as epoch seconds (milliseconds above 2e10) is outside"),
    ],
)
def test_a_date_that_cannot_be_is_a_problem_naming_the_field_not_1970(
    tmp_path: Path, field: str, value: str, reason: str
) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(f'{{"id": "r", "text": "x", "{field}": {value}}}\n{{"id": "fine", "{field}": 0}}\n', "utf-8")
    problem, fine = list(read_jsonl(path))
    assert isinstance(problem, Problem) and problem.doc_id == "r" and problem.line == 1
    assert problem.reason.startswith(reason), problem.reason
    assert isinstance(fine, Document) and getattr(fine, field) == datetime(1970, 1, 1, tzinfo=UTC)


def test_a_name_beside_a_title_keeps_its_place_after_metadata_so_chunk_hashes_stay(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [b'{"id": "t", "title": "Tool", "name": "tool", "owner": "bob", "metadata": {"x": 1}}'],
    )
    (document,) = read_jsonl(path)
    assert isinstance(document, Document)
    # A record without text is chunked from its metadata as listed: the order is part of every chunk's hash.
    assert list(document.metadata) == ["owner", "x", "name"]
    assert document.sections == (Section("owner: bob\nx: 1\nname: tool"),)
    assert document.warnings == ()
