"""``esbridge eval`` on a user's own BEIR folder as other tools write it: what it reads is evaluated whole, what it
cannot use is counted in one warning, and what it refuses names the file and line. The embedded engine with a
hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from esbridge.cli import main
from esbridge.evaluation.dataset import corpus_warnings, judged_queries

EVAL = ["--engine", "embedded", "--methods", "bm25", "--json"]


def _evaluate(runner: CliRunner, argument: str) -> Result:
    return runner.invoke(main, ["eval", argument, *EVAL])


def test_files_with_marks_windows_line_ends_number_ids_and_no_last_newline_are_evaluated_whole(
    runner: CliRunner, energy: Path
) -> None:
    corpus = [{"_id": 1, "text": "Photovoltaic cells turn sunlight into electricity."}, {"_id": "2", "text": "Wind."}]
    (energy / "corpus.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(map(json.dumps, corpus)).encode())
    (energy / "queries.jsonl").write_bytes(b'\xef\xbb\xbf{"_id": 1, "text": "sunlight"}\r\n{"_id": 2, "text": "wind"}')
    (energy / "qrels" / "test.tsv").write_bytes(b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\n1\t1\t1\r\n2\t2\t1")

    result = _evaluate(runner, str(energy))

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["queries"], summary["results"][0]["recall@100"], summary["warnings"]) == (2, 1.0, [])
    assert (summary["ingest"]["documents_indexed"], summary["ingest"]["failed"]) == (2, [])


def test_corpus_records_it_cannot_use_and_judged_documents_it_lacks_are_each_said_once(
    runner: CliRunner, energy: Path
) -> None:
    with (energy / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write(json.dumps({"_id": "solar", "text": "A second solar record, not ingested."}) + "\n")
        corpus.write(json.dumps({"text": "A record without an id."}) + "\n")
    with (energy / "qrels" / "test.tsv").open("a", encoding="utf-8") as qrels:
        qrels.write("q1\tgone-1\t1\nq1\tgone-2\t1\nq2\tgone-3\t1\nq2\tgone-4\t0\n")

    result = _evaluate(runner, str(energy))

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["warnings"] == [
        "2 corpus records of energy were not ingested (corpus.jsonl:3: duplicate _id 'solar' (first on line 1); "
        "record skipped; corpus.jsonl:4: field '_id' is missing); the figures are over the rest (the JSON's "
        "ingest.failed lists them)",
        "qrels/test.tsv judges 3 documents relevant that are not in corpus.jsonl (e.g. 'gone-1', 'gone-2', "
        "'gone-3'); no configuration can find them",
    ]
    assert summary["results"][0]["recall@100"] == 0.4167  # q1 finds 1 of 3, q2 1 of 2: the missing ones count


def test_qrels_that_are_not_utf8_are_refused_naming_the_line(runner: CliRunner, energy: Path) -> None:
    (energy / "qrels" / "test.tsv").write_bytes(b"q1\tsolar\t1\nq2\twind\t1\nq2\tw\xefnd\t1\n")
    result = _evaluate(runner, str(energy))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: {energy}/qrels/test.tsv, line 3: invalid UTF-8: byte 0xef at byte offset 4 of the line (invalid "
        "continuation byte); the file must be UTF-8 text"
    )


def test_a_split_that_is_not_there_is_refused_listing_those_that_are(runner: CliRunner, energy: Path) -> None:
    (energy / "qrels" / "train.tsv").write_text("q1\tsolar\t1\n", encoding="utf-8")
    result = _evaluate(runner, f"{energy}@dev")
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: BEIR qrels file not found: {energy}/qrels/dev.tsv; splits available: test, train"
    )


def test_a_query_given_twice_is_refused_naming_both_lines(runner: CliRunner, energy: Path) -> None:
    with (energy / "queries.jsonl").open("a", encoding="utf-8") as queries:
        queries.write(json.dumps({"_id": "q1", "text": "solar power"}) + "\n")
    result = _evaluate(runner, str(energy))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: {energy}/queries.jsonl, line 3: duplicate query _id 'q1' (first on line 1); keep one of the two"
    )


def test_one_judged_document_the_corpus_lacks_is_said_in_the_singular(energy: Path) -> None:
    (energy / "qrels" / "test.tsv").write_text("q1\tsolar\t1\nq2\tgone\t1\n", encoding="utf-8")
    assert corpus_warnings(energy, "test", judged_queries(energy, "test")) == [
        "qrels/test.tsv judges 1 document relevant that is not in corpus.jsonl (e.g. 'gone'); no configuration can "
        "find it"
    ]


def test_a_settings_file_that_is_not_utf8_is_refused_naming_the_line(
    runner: CliRunner, energy: Path, tmp_path: Path
) -> None:
    config = tmp_path / "latin.toml"
    config.write_bytes(b'[pipeline]\nfusion = "caf\xe9"\n')
    said = "line 2: invalid UTF-8: byte 0xe9 at byte offset 13 of the line (invalid continuation byte)"
    result = runner.invoke(main, ["eval", str(energy), *EVAL, "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == f"Error: cannot read config file {config}: {said}"
    tune = ["tune", str(energy), "--split", "test", "--engine", "embedded", "--output", str(config)]
    result = runner.invoke(main, tune)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == f"Error: cannot read settings file {config} (--output): {said}"
