"""JSON-lines files whose lines end in ``\\r`` alone (old Mac files), ``\\r\\n`` or ``\\n``: every reader of them
(ingest of a JSONL file or a registry, a BEIR corpus and its queries, an export) reads each line alone and numbers
it right; characters other tools end lines at stay inside the line's strings."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from esbridge.ingest.beir import read_beir_corpus, read_beir_queries
from esbridge.ingest.export_file import read_export, read_header
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry

ENDS = [b"\r", b"\r\n", b"\n"]
HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 2}


def _write(path: Path, lines: list[bytes], end: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(end.join(lines) + end)
    return path


def _split(items: list[Document | Problem]) -> tuple[dict[str, Document], list[tuple[int | None, str]]]:
    documents = {item.doc_id: item for item in items if isinstance(item, Document)}
    return documents, [(item.line, item.reason) for item in items if isinstance(item, Problem)]


@pytest.mark.parametrize("end", ENDS)
def test_a_jsonl_file_is_read_line_by_line_with_its_line_numbers(tmp_path: Path, end: bytes) -> None:
    lines = [
        b'{"id": "a", "text": "first\xe2\x80\xa8still first\xc2\x85and this"}',
        b"",
        b'{"id": "b", "text": ',
        b'{"id": "c", "text": "third"}',
    ]
    documents, problems = _split(list(read_jsonl(_write(tmp_path / "docs.jsonl", lines, end))))
    assert sorted(documents) == ["a", "c"]
    assert "first\u2028still first\x85and" in documents["a"].sections[0].text
    assert problems == [(3, "invalid JSON: Expecting value at the end of the line (column 21)")]


@pytest.mark.parametrize("end", ENDS)
def test_a_registry_file_is_read_line_by_line(tmp_path: Path, end: bytes) -> None:
    lines = [json.dumps({"id": name, "name": name.title()}).encode() for name in ("jira", "slack", "jira")]
    documents, problems = _split(list(read_registry(_write(tmp_path / "registry.jsonl", lines, end))))
    assert sorted(documents) == ["jira", "slack"]
    assert [line for line, _ in problems] == [3]
    assert "first on line 1" in problems[0][1]


@pytest.mark.parametrize("end", ENDS)
def test_a_beir_corpus_and_its_queries_are_read_line_by_line(tmp_path: Path, end: bytes) -> None:
    folder = tmp_path / "ds"
    corpus = [json.dumps({"_id": f"d{number}", "title": "", "text": f"doc {number}"}).encode() for number in (1, 2)]
    _write(folder / "corpus.jsonl", corpus, end)
    queries = [b'{"_id": "q1", "text": "one"}', b'{"_id": "q2", "text": "two"}', b'{"_id": "q1", "text": "again"}']
    _write(folder / "queries.jsonl", queries[:2], end)
    documents, problems = _split(list(read_beir_corpus(folder)))
    assert sorted(documents) == ["d1", "d2"] and not problems
    assert read_beir_queries(folder) == {"q1": "one", "q2": "two"}
    _write(folder / "queries.jsonl", queries, end)
    with pytest.raises(Exception, match=r"queries\.jsonl, line 3: duplicate query _id 'q1' \(first on line 1\)"):
        read_beir_queries(folder)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("end", ENDS)
def test_an_export_is_read_line_by_line(tmp_path: Path, end: bytes, compress: bool) -> None:
    chunks = [{"_id": f"{name}#0", "doc_id": name, "body": f"{name}\u2028{name}"} for name in ("a", "b")]
    lines = [json.dumps(HEADER).encode(), *(json.dumps(chunk, ensure_ascii=False).encode() for chunk in chunks)]
    path = tmp_path / "export.jsonl"
    data = end.join([*lines[:2], b'{"_id": ', lines[2]]) + end
    path.write_bytes(gzip.compress(data) if compress else data)
    assert read_header(path) == HEADER
    header, read = read_export(path)
    assert header == HEADER
    assert list(read) == [
        (2, chunks[0]),
        (3, "not JSON: Expecting value at the end of the line (column 9)"),
        (4, chunks[1]),
    ]
