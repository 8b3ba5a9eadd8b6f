"""Reading a JSON-lines file as a whole: its encoding and byte order marks, compression, lines that are not JSON
or not records, and the limits that keep one bad line from costing the others."""

from __future__ import annotations

import gzip
import shlex
from pathlib import Path

import pytest

from esbridge.errors import SourceError
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document, Problem, Section
from esbridge.ingest.sources import read_source
from tests.unit.ingest.test_jsonl import write_lines


def test_byte_order_mark_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "x", "text": "t"}\n\n\r\n  \t\n{"id": "y", "text": "u"}\n')
    items = list(read_jsonl(path))
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["x", "y"]
    assert len(items) == 2


def test_a_byte_order_mark_starting_a_later_line_is_read_as_the_first_lines(tmp_path: Path) -> None:
    # What `cat a.jsonl b.jsonl` gives when both were saved with a byte order mark.
    bom = b"\xef\xbb\xbf"
    path = tmp_path / "joined.jsonl"
    path.write_bytes(bom + b'{"id": "a", "text": "x"}\r\n' + bom + b'{"id": "b", "text": "y"}\r\n' + bom + b"\n")
    items = list(read_jsonl(path))
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["a", "b"]
    assert len(items) == 2, "the mark alone on a line is a blank line"


def test_a_missing_file_or_a_folder_raises_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"JSON-lines file not found: .*nope\.jsonl"):
        read_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(SourceError, match="is not a file"):
        read_jsonl(tmp_path)


@pytest.mark.parametrize(("encoding", "name"), [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32")])
def test_a_utf16_file_is_refused_once_naming_its_encoding(tmp_path: Path, encoding: str, name: str) -> None:
    # Read as UTF-8, each of its lines failed alone ("not UTF-8", "invalid JSON"), and UTF-16 was never named.
    path = tmp_path / "records.jsonl"
    text = '{"id": "a", "text": "alpha"}\n{"id": "b", "text": "beta"}\n'
    path.write_bytes(("\ufeff" + text).encode(encoding) if encoding == "utf-16-be" else text.encode(encoding))
    with pytest.raises(SourceError) as refused:
        list(read_jsonl(path))
    assert str(refused.value) == (
        f"JSON-lines file {path} is {name} text (it begins with a {name} byte order mark), not UTF-8: convert it "
        f"first (iconv -f {name} -t UTF-8 {path} > {tmp_path / 'records.utf8.jsonl'})"
    )


def test_a_gzipped_file_raises_source_error_naming_it(tmp_path: Path) -> None:
    # Read as text, each of its lines failed alone as "invalid UTF-8", and the file was never said to be gzip.
    path = tmp_path / "records.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"id": "a", "text": "alpha"}\n'))
    with pytest.raises(SourceError) as refused:
        read_jsonl(path)
    assert str(refused.value) == (
        f"JSON-lines file {path} is gzip-compressed: decompress it first "
        f"(gunzip -c {path} > {tmp_path / 'records.utf8.jsonl'})"
    )


@pytest.mark.parametrize(
    ("name", "converted"),
    [("my records.jsonl.gz", "my records.utf8.jsonl"), ("dump.gz", "dump.utf8.jsonl"), ("x.NDJSON", "x.utf8.jsonl")],
)
def test_the_conversion_hint_quotes_its_paths_and_names_a_file_ingest_reads_as_json_lines(
    tmp_path: Path, name: str, converted: str
) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(b'{"id": "a", "text": "alpha"}\n'))
    with pytest.raises(SourceError) as refused:
        read_jsonl(path)
    decompressed = tmp_path / converted
    assert f"(gunzip -c {shlex.quote(str(path))} > {shlex.quote(str(decompressed))})" in str(refused.value)
    decompressed.write_bytes(gzip.decompress(path.read_bytes()))
    assert [document.doc_id for document in read_source(decompressed)] == ["a"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"id": "n", "metadata": {"x": NaN}}', "invalid JSON: NaN is not a JSON value"),
        (b'{"id": "n", "score": -Infinity}', "invalid JSON: -Infinity is not a JSON value"),
        (b'{"id": "n", "metadata": {"x": 1e999}}', "invalid JSON: the number 1e999 is beyond a 64-bit float's range"),
        (b'{"id": "n", "weight": -2E+400}', "invalid JSON: the number -2E+400 is beyond a 64-bit float's range"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
        (b'{"id": "n"} {"id": "m"}', "invalid JSON: Extra data at column 13"),
        (b'"just a string"', "expected a JSON object, got string"),
    ],
)
def test_more_lines_that_are_not_records(tmp_path: Path, line: bytes, reason: str) -> None:
    (problem,) = read_jsonl(write_lines(tmp_path / "r.jsonl", [line]))
    assert isinstance(problem, Problem)
    assert problem.line == 1
    assert problem.reason.startswith(reason)


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            [b'{"id": "b", "text": "missing brace"', b'{"id": "c"}'],
            "invalid JSON: Expecting ',' delimiter at the end of the line (column 36)",
        ),
        ([b'{"id": "b", "text": "missing brace"\r', b""], "invalid JSON: Expecting ',' delimiter at the end"),
        ([b'{"id": "b", "text": "tab\there"}'], "invalid JSON: Invalid control character at column 25"),
        ([b'{"id": "b", "text": "x"} 42'], "invalid JSON: Extra data at column 26"),
    ],
)
def test_invalid_json_is_located_on_the_line(tmp_path: Path, lines: list[bytes], reason: str) -> None:
    problem = next(iter(read_jsonl(write_lines(tmp_path / "r.jsonl", lines))))
    assert isinstance(problem, Problem)
    assert problem.line == 1
    assert problem.reason.startswith(reason)
    assert " at at " not in problem.reason


def test_a_lone_surrogate_in_a_key_or_nested_value_is_located(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [b'{"id": "n", "metadata": {"a": [1, "ok", "\\ud83d x \\udc00"]}}', b'{"id": "m", "k\\udfff": 1}'],
    )
    reasons = [item.reason for item in read_jsonl(path) if isinstance(item, Problem)]
    assert reasons == [
        "field 'metadata.a[2]': unpaired UTF-16 surrogate escape in a string",
        "field 'k\\udfff': unpaired UTF-16 surrogate escape in a string",
    ]


def test_a_surrogate_pair_escape_is_a_valid_character(tmp_path: Path) -> None:
    (document,) = read_jsonl(write_lines(tmp_path / "r.jsonl", [b'{"id": "e", "text": "smile \\ud83d\\ude00"}']))
    assert isinstance(document, Document)
    assert document.sections == (Section("smile \U0001f600"),)


def test_an_empty_file_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert list(read_jsonl(path)) == []


def test_a_record_nested_too_deeply_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    deep = b'{"a": ' * 600 + b"1" + b"}" * 600
    path = write_lines(tmp_path / "r.jsonl", [b'{"id": "n", "extra": ' + deep + b"}", b'{"id": "m", "text": "ok"}'])
    problem, document = read_jsonl(path)
    assert isinstance(problem, Problem)
    assert (problem.line, problem.doc_id) == (1, "n")
    assert problem.reason == "field 'extra': nested more than 100 levels deep"
    assert isinstance(document, Document)


def test_a_key_given_twice_in_one_object_fails_that_line_naming_the_key(tmp_path: Path) -> None:
    """Python's reader would keep the later value without a word (both clusters refuse such a document); the
    record's id is still read, so what was indexed for it is kept."""
    lines = [
        b'{"id": "twice", "text": "first words", "text": "second words"}',
        b'{"id": "inner", "text": "x", "metadata": {"k": 1, "k": 2}}',
        b'{"id": "fine", "text": "x", "metadata": {"k": {"k": 1}}}',
    ]
    twice, inner, fine = read_jsonl(write_lines(tmp_path / "r.jsonl", lines))
    assert isinstance(twice, Problem) and isinstance(inner, Problem)
    assert (twice.line, twice.doc_id) == (1, "twice")
    assert "the key 'text' is given twice in one object" in twice.reason
    assert (inner.line, inner.doc_id) == (2, "inner")
    assert "the key 'k' is given twice" in inner.reason
    assert isinstance(fine, Document) and fine.metadata == {"k": {"k": 1}}
