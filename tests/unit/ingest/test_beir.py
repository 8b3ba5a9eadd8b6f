from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from esbridge.errors import ConfigError, SourceError
from esbridge.ingest.beir import read_beir_corpus, read_beir_queries, read_qrels
from esbridge.ingest.model import Document, Problem, Section
from tests.support.data import SCIFACT, require

# The shared data folder sits next to the repository: <repo>/../shared/data/beir/scifact.


def make_dataset(
    folder: Path, corpus: Sequence[bytes], queries: Sequence[bytes] = (), qrels: Mapping[str, str] | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_bytes(b"\n".join(corpus) + b"\n")
    (folder / "queries.jsonl").write_bytes(b"\n".join(queries) + b"\n")
    (folder / "qrels").mkdir(exist_ok=True)
    for split, text in (qrels or {}).items():
        (folder / "qrels" / f"{split}.tsv").write_text(text, encoding="utf-8")
    return folder


def test_corpus_lines_become_documents_or_problems(tmp_path: Path) -> None:
    folder = make_dataset(
        tmp_path / "ds",
        [
            b'{"_id": "10", "title": "Ten", "text": "Body ten.", "metadata": {"url": "http://x/10"}}',
            b'{"_id": 11, "title": "", "text": "Only text.", "year": 2020}',
            b'{"_id": "12", "text": 5}',
            b"not json",
            b'{"title": "no id", "text": "t"}',
            b'{"_id": "13", "text": "bad byte \xff"}',
            b"",
            b'{"_id": "10", "text": "again"}',
            b'{"_id": "14", "title": "", "text": "  "}',
        ],
    )
    items = list(read_beir_corpus(folder))
    documents = [item for item in items if isinstance(item, Document)]
    problems = {item.line: item.reason for item in items if isinstance(item, Problem)}

    assert documents == [
        Document(doc_id="10", title="Ten", sections=(Section("Body ten."),), metadata={"url": "http://x/10"}),
        Document(doc_id="11", title="", sections=(Section("Only text."),), metadata={"year": 2020}),
        Document(doc_id="14", title="", sections=(), warnings=("record has neither title nor text",)),
    ]
    assert problems == {
        3: "field 'text': Input should be a valid string, got number 5",
        4: "invalid JSON: Expecting value at column 1",
        5: "field '_id' is missing",
        6: "invalid UTF-8: byte 0xff at byte offset 32 of the line (invalid start byte)",
        8: "duplicate _id '10' (first on line 1); record skipped",
    }
    assert {item.source for item in items if isinstance(item, Problem)} == {"corpus.jsonl"}
    doc_ids = {item.line: item.doc_id for item in items if isinstance(item, Problem)}
    assert doc_ids == {3: "12", 4: None, 5: None, 6: "13", 8: "10"}


def test_a_field_that_metadata_gives_another_value_is_a_warning_not_a_silent_loss(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path, [b'{"_id": "d", "text": "t", "year": 1999, "metadata": {"year": 2001, "x": 1}}'])
    (document,) = read_beir_corpus(folder)
    assert isinstance(document, Document)
    assert document.metadata == {"year": 2001, "x": 1}
    assert document.warnings == (
        "field 'year' is given at the top level (number 1999) and in metadata (number 2001); the value in metadata "
        "is kept, the other is not indexed",
    )


def test_a_corpus_line_nested_too_deep_is_a_problem_of_its_own_not_a_crash_later(tmp_path: Path) -> None:
    deep = b"[" * 500 + b"1" + b"]" * 500
    deep_line = b'{"_id": "d1", "title": "T", "text": "x", "metadata": {"deep": ' + deep + b"}}"
    folder = make_dataset(tmp_path / "ds", [deep_line, b'{"_id": "d2", "text": "y"}'])
    problem, document = list(read_beir_corpus(folder))
    assert isinstance(problem, Problem) and isinstance(document, Document)
    assert (problem.line, problem.doc_id, document.doc_id) == (1, "d1", "d2")
    assert problem.reason == "field 'metadata': nested more than 100 levels deep"


def test_missing_corpus_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"BEIR corpus not found: .*empty.corpus\.jsonl"):
        read_beir_corpus(tmp_path / "empty")


def test_queries_are_a_plain_dict(tmp_path: Path) -> None:
    folder = make_dataset(
        tmp_path / "ds",
        [],
        [b'{"_id": "1", "text": " What is ten? ", "metadata": {}}', b"", b'{"_id": 2, "text": "Eleven?"}'],
    )
    assert read_beir_queries(folder) == {"1": "What is ten?", "2": "Eleven?"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"_id": "1"}', "line 2: query '1' has no text"),
        (b'{"_id": "1", "text": "\\u200b\\u2060 "}', "line 2: query '1' has no text"),
        (b'{"_id": "0", "text": "dup"}', r"line 2: duplicate query _id '0' \(first on line 1\); keep one of the two"),
        (b'{"_id": 0, "text": "dup"}', r"line 2: duplicate query _id '0' \(first on line 1\)"),  # a number in JSON
        (b'{"_id": "0", "text": ""}', r"line 2: duplicate query _id '0' \(first on line 1\)"),
        (b"{", "line 2: invalid JSON"),
        (b'{"text": "t"}', "line 2: field '_id' is missing"),
    ],
)
def test_a_bad_query_line_raises_naming_file_and_line(tmp_path: Path, line: bytes, reason: str) -> None:
    folder = make_dataset(tmp_path / "ds", [], [b'{"_id": "0", "text": "ok"}', line])
    with pytest.raises(SourceError, match=r"queries\.jsonl, " + reason.replace("?", r"\?")):
        read_beir_queries(folder)


def test_missing_queries_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"BEIR queries file not found: .*queries\.jsonl"):
        read_beir_queries(tmp_path)


def test_qrels_skip_the_header_and_group_by_query(tmp_path: Path) -> None:
    text = "query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n\n2\t10\t0\n"
    folder = make_dataset(tmp_path / "ds", [], [], {"test": text, "train": "5\t50\t1\n"})
    assert read_qrels(folder, "test") == {"1": {"10": 1, "11": 2}, "2": {"10": 0}}
    assert read_qrels(folder, "train") == {"5": {"50": 1}}  # no header: the first row is data


def test_missing_qrels_split_names_path_and_available_splits(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": "", "train": ""})
    with pytest.raises(SourceError, match=r"qrels file not found: .*dev\.tsv; splits available: test, train"):
        read_qrels(folder, "dev")


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("1\t10\tone", "score 'one' is not an integer"),
        ("1\t10\t1_0", "score '1_0' is not an integer"),  # not 10, as int() reads it
        ("1\t10\t\u0661", "score '\u0661' is not an integer"),  # an Arabic-Indic one, not 1
        ("1\t10", "expected query-id, corpus-id and score"),
    ],
)
def test_a_bad_qrels_row_raises_naming_the_line(tmp_path: Path, row: str, reason: str) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": f"query-id\tcorpus-id\tscore\n{row}\n"})
    with pytest.raises(SourceError, match=r"test\.tsv, line 2: " + reason):
        read_qrels(folder, "test")


def test_a_document_judged_twice_for_a_query_with_different_scores_is_refused_naming_both_lines(tmp_path: Path) -> None:
    text = "query-id\tcorpus-id\tscore\n1\t10\t2\n1\t11\t1\n1\t10\t0\n"
    folder = make_dataset(tmp_path / "ds", [], [], {"test": text})
    with pytest.raises(
        SourceError, match=r"test\.tsv, line 4: query '1' judges document '10' 0, but line 2 judges it 2"
    ):
        read_qrels(folder, "test")


def test_a_repeated_row_with_the_same_score_is_read_once(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": "1\t10\t2\n1\t10\t2\n"})
    assert read_qrels(folder, "test") == {"1": {"10": 2}}


def test_a_byte_order_mark_is_not_part_of_the_first_query_id(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": "\ufeff1\t10\t1\n"})
    assert read_qrels(folder, "test") == {"1": {"10": 1}}


def test_a_split_is_a_name_not_a_path(tmp_path: Path) -> None:
    for split in ("../test", "a/b", ".", ""):
        with pytest.raises(ConfigError, match="plain name"):
            read_qrels(tmp_path, split)


def test_the_real_scifact_corpus_reads_completely() -> None:
    items = list(read_beir_corpus(require(SCIFACT)))

    documents = [item for item in items if isinstance(item, Document)]
    assert [item for item in items if isinstance(item, Problem)] == []
    assert len(documents) == 5183
    assert len({document.doc_id for document in documents}) == 5183
    assert documents[0].doc_id == "4983"
    assert documents[0].title.startswith("Microstructural development of human newborn cerebral white matter")
    assert all(document.sections for document in documents)

    queries = read_beir_queries(SCIFACT)
    assert len(queries) == 1109
    assert queries["0"] == "0-dimensional biomaterials lack inductive properties."
    test = read_qrels(SCIFACT, "test")
    assert (len(test), sum(len(docs) for docs in test.values())) == (300, 339)
    assert test["1"] == {"31715818": 1}


def test_a_first_row_scored_with_a_decimal_is_refused_not_skipped_as_a_header(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": "1\t10\t1.0\n2\t20\t1\n"})
    with pytest.raises(SourceError, match=r"test\.tsv, line 1: score '1\.0' is not an integer"):
        read_qrels(folder, "test")


@pytest.mark.parametrize("header", ["query-id corpus-id score\n", "\n \nquery-id\tcorpus-id\tscore\n"])
def test_a_header_separated_by_spaces_or_after_blank_lines_is_skipped(tmp_path: Path, header: str) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": f"{header}1\t10\t1\n"})
    assert read_qrels(folder, "test") == {"1": {"10": 1}}


@pytest.mark.parametrize(
    "rows",
    [
        "query-id\tcorpus-id\tscore\t\n1\t10\t1\t\n2\t20\t2\t \t\n",  # tabs after the score
        "query-id\tcorpus-id\tscore\r\n1\t10\t1\r\n2\t20\t2\r\n",  # saved on Windows
    ],
)
def test_rows_ending_in_tabs_or_carriage_returns_are_read(tmp_path: Path, rows: str) -> None:
    folder = make_dataset(tmp_path / "ds", [], [])
    (folder / "qrels" / "test.tsv").write_bytes(rows.encode())
    assert read_qrels(folder, "test") == {"1": {"10": 1}, "2": {"20": 2}}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("1 10 1", "this row separates its fields by spaces"),
        ("1 0 10 1", r"this row has four fields, as TREC qrels have \(query-id 0 corpus-id score\)"),
        ("1\t0\t10\t1", r"this row has four fields, as TREC qrels have"),
        ("1\t\t1", "this row has an empty corpus-id"),
        ("1\t10\t1\tx", "this row has 4 fields"),
        ("1\t10\t\t1", "this row has 4 fields"),  # which of the two is the score is not certain
    ],
)
def test_a_row_in_another_layout_is_refused_saying_which(tmp_path: Path, row: str, reason: str) -> None:
    folder = make_dataset(tmp_path / "ds", [], [], {"test": f"query-id\tcorpus-id\tscore\n{row}\n"})
    with pytest.raises(
        SourceError, match=r"test\.tsv, line 2: expected query-id, corpus-id and score separated by tabs; " + reason
    ):
        read_qrels(folder, "test")


@pytest.mark.parametrize(
    ("encode", "said"),
    [
        (lambda text: gzip.compress(text.encode()), "it is gzip-compressed: decompress it first (gunzip -c "),
        (lambda text: text.encode("utf-16"), "it is UTF-16 text, not UTF-8: convert it first (iconv -f UTF-16 "),
    ],
)
def test_a_compressed_or_utf16_qrels_file_is_refused_saying_what_it_is(
    tmp_path: Path, encode: Callable[[str], bytes], said: str
) -> None:
    folder = make_dataset(tmp_path / "ds", [], [])
    (folder / "qrels" / "test.tsv").write_bytes(encode("query-id\tcorpus-id\tscore\n1\t10\t1\n"))
    with pytest.raises(SourceError, match=r"cannot read .*test\.tsv: " + re.escape(said)):
        read_qrels(folder, "test")


def test_a_compressed_corpus_or_queries_file_is_converted_in_place_as_the_folder_reads_it_by_name(
    tmp_path: Path,
) -> None:
    folder = make_dataset(tmp_path / "ds", [], [])
    for name, read in (
        ("corpus.jsonl", lambda: list(read_beir_corpus(folder))),
        ("queries.jsonl", lambda: read_beir_queries(folder)),
    ):
        path = folder / name
        path.write_bytes(gzip.compress(b'{"_id": "1", "text": "x"}\n'))
        with pytest.raises(SourceError) as raised:
            read()
        assert str(raised.value).endswith(f"(gunzip -c {path} > {path}.utf8 && mv {path}.utf8 {path})")
        path.write_bytes(b"")
