"""BEIR files as users' own tools write them: where a file stops being readable is named by its line, and nothing a
file holds is silently dropped or renamed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esbridge.errors import SourceError
from esbridge.evaluation.dataset import judged_queries
from esbridge.ingest.beir import read_beir_corpus, read_beir_queries, read_qrels
from esbridge.ingest.model import Document, Problem


def _folder(tmp_path: Path, qrels: bytes, queries: bytes = b'{"_id": "1", "text": "one"}\n') -> Path:
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "qrels" / "test.tsv").write_bytes(qrels)
    (folder / "queries.jsonl").write_bytes(queries)
    return folder


def test_qrels_that_stop_being_utf8_in_the_middle_of_line_5000_name_that_line(tmp_path: Path) -> None:
    rows = b"query-id\tcorpus-id\tscore\n" + b"1\t10\t1\n" * 4998 + b"2\tcaf\xe9-20\t1\n" + b"3\t30\t1\n"
    folder = _folder(tmp_path, rows)
    with pytest.raises(SourceError) as raised:
        read_qrels(folder, "test")
    assert str(raised.value) == (
        f"{folder}/qrels/test.tsv, line 5000: invalid UTF-8: byte 0xe9 at byte offset 5 of the line (invalid "
        "continuation byte); the file must be UTF-8 text"
    )


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x1c", "\x0c"])
def test_an_id_holding_a_character_other_tools_end_lines_at_is_read_whole(tmp_path: Path, separator: str) -> None:
    folder = _folder(tmp_path, f"1\tdoc{separator}a\t1\n2\t20\tx\n".encode())
    with pytest.raises(SourceError, match=r"test\.tsv, line 2: score 'x' is not an integer"):
        read_qrels(folder, "test")
    (folder / "qrels" / "test.tsv").write_text(f"1\tdoc{separator}a\t1\n2\t20\t1\n", encoding="utf-8")
    assert read_qrels(folder, "test") == {"1": {f"doc{separator}a": 1}, "2": {"20": 1}}


@pytest.mark.parametrize(
    "rows",
    [
        b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\n1\t10\t1\r\n2\t20\t2",  # a mark, Windows line ends, no last newline
        b"query-id\tcorpus-id\tscore\r1\t10\t1\r2\t20\t2\r",  # classic Mac line ends
        b"1\t10\t1\n\xef\xbb\xbf2\t20\t2\n",  # two files joined with cat, each with its mark
        b"query-id\tcorpus-id\tscore\n1\t10\t1\n\xef\xbb\xbfquery-id\tcorpus-id\tscore\n2\t20\t2\n",  # and header
        b"query-id corpus-id score\n1\t10\t1\n2\t20\t2\n",  # BEIR's header, by spaces
    ],
)
def test_qrels_marks_line_ends_and_headers_are_no_part_of_any_id(tmp_path: Path, rows: bytes) -> None:
    assert read_qrels(_folder(tmp_path, rows), "test") == {"1": {"10": 1}, "2": {"20": 2}}


def test_qrels_scores_below_zero_are_read_as_written(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"1\t10\t-1\n1\t11\t+2\n1\t12\t0\n")
    assert read_qrels(folder, "test") == {"1": {"10": -1, "11": 2, "12": 0}}


def test_a_row_cut_off_before_its_score_says_the_score_is_empty(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"1\t10\t1\n2\t20\t")
    with pytest.raises(SourceError, match=r"test\.tsv, line 2: expected .* by tabs; this row has an empty score$"):
        read_qrels(folder, "test")


@pytest.mark.parametrize("rows", [b"", b"\n\n", b"query-id\tcorpus-id\tscore\n"])
def test_qrels_without_any_row_are_refused_as_empty_not_as_judging_nothing_relevant(
    tmp_path: Path, rows: bytes
) -> None:
    folder = _folder(tmp_path, rows)
    with pytest.raises(SourceError) as raised:
        judged_queries(folder, "test")
    assert str(raised.value) == (
        f"{folder}/qrels/test.tsv holds no judgement (it is empty, or holds only its header); there is nothing to "
        "evaluate"
    )


def test_an_empty_queries_file_is_named_as_empty(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"1\t10\t1\n2\t20\t1\n", queries=b"")
    with pytest.raises(SourceError) as raised:
        judged_queries(folder, "test")
    assert str(raised.value) == (
        f"{folder}/queries.jsonl holds no query, but {folder}/qrels/test.tsv judges documents relevant to 2 queries"
    )


def test_query_ids_written_as_json_numbers_match_the_qrels(tmp_path: Path) -> None:
    queries = b'\xef\xbb\xbf{"_id": 1, "text": "one"}\r\n{"_id": " 2 ", "text": "two"}'  # no last newline
    judged = judged_queries(_folder(tmp_path, b"1\t10\t1\n2\t20\t1\n", queries), "test")
    assert judged.queries == {"1": "one", "2": "two"}


def test_a_query_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    queries = b'{"_id": "1", "text": "one"}\n{"_id": "2", "text": "caf\xe9"}\n'
    with pytest.raises(SourceError, match=r"queries\.jsonl, line 2: invalid UTF-8: byte 0xe9 at byte offset 25"):
        read_beir_queries(_folder(tmp_path, b"", queries))


def test_huge_lines_are_read_whole(tmp_path: Path) -> None:
    text = "word " * 400_000  # 2 MB on one line
    folder = _folder(tmp_path, b"1\t10\t1\n", json.dumps({"_id": "1", "text": text}).encode())
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "10", "text": text}), encoding="utf-8")
    assert read_beir_queries(folder) == {"1": text.strip()}
    [document] = list(read_beir_corpus(folder))
    assert isinstance(document, Document)
    assert len(document.sections[0].text) == len(text.strip())


def test_corpus_records_without_an_id_or_with_one_given_before_are_problems_naming_their_lines(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path, b"")
    records = [{"_id": 7, "text": "seven"}, {"text": "no id"}, {"_id": "7", "text": "seven again"}]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    items = list(read_beir_corpus(folder))
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["7"]
    assert [(item.line, item.reason) for item in items if isinstance(item, Problem)] == [
        (2, "field '_id' is missing"),
        (3, "duplicate _id '7' (first on line 1); record skipped"),
    ]


def test_a_record_naming_its_id_id_is_told_that_beir_names_it_underscore_id(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"", queries=b'{"id": "1", "text": "one"}\n')
    with pytest.raises(SourceError) as raised:
        read_beir_queries(folder)
    assert str(raised.value) == (
        f"{folder}/queries.jsonl, line 1: field '_id' is missing (the record has 'id': BEIR names the id '_id')"
    )
    (folder / "corpus.jsonl").write_text('{"id": "10", "text": "ten"}\n{"_id": "11", "id": "x", "text": "eleven"}\n')
    items = list(read_beir_corpus(folder))
    assert [(item.line, item.reason) for item in items if isinstance(item, Problem)] == [
        (1, "field '_id' is missing (the record has 'id': BEIR names the id '_id')")
    ]
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["11"]


def test_a_header_unlike_the_first_lines_is_a_row_refused_by_its_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"query-id\tcorpus-id\tscore\n1\t10\t1\nqid\tdocid\trel\n")
    with pytest.raises(SourceError, match=r"test\.tsv, line 3: score 'rel' is not an integer"):
        read_qrels(folder, "test")
