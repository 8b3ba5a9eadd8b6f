"""``esbridge eval`` with rows a user's own files get wrong: queries without text, qrels rows ending in tabs, an
index reused after its corpus changed, a configuration named twice. The embedded engine with a hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main

EVAL = ["--engine", "embedded", "--methods", "bm25", "--json"]


def _add_query(folder: Path, query: str, text: str) -> None:
    with (folder / "queries.jsonl").open("a", encoding="utf-8") as queries:
        queries.write(json.dumps({"_id": query, "text": text}) + "\n")


def _corpus(folder: Path, docs: dict[str, str]) -> None:
    lines = [json.dumps({"_id": doc, "title": "", "text": text}) for doc, text in docs.items()]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _evaluate(runner: CliRunner, folder: Path, *extra: str) -> Result:
    return runner.invoke(main, ["eval", str(folder), *EVAL, *extra])


@pytest.mark.parametrize("command", [["eval", *EVAL], ["tune", "--engine", "embedded", "--dry-run", "--json"]])
def test_a_query_without_text_that_judges_nothing_is_skipped_with_a_warning(
    runner: CliRunner, energy: Path, command: list[str]
) -> None:
    _add_query(energy, "q3", " \t")
    _add_query(energy, "q4", "")
    result = runner.invoke(main, [command[0], str(energy), "--split", "test", *command[1:]])
    assert result.exit_code == 0, result.output
    said = (
        "2 queries of queries.jsonl have no text (e.g. 'q3', 'q4'); skipped, as qrels/test.tsv judges no document "
        "relevant to them"
    )
    assert said in json.loads(result.stdout)["warnings"]
    if command[0] == "eval":
        assert json.loads(result.stdout)["queries"] == 2


def test_a_query_without_text_that_judges_a_document_relevant_is_refused_naming_its_line(
    runner: CliRunner, energy: Path
) -> None:
    _add_query(energy, "q3", "   ")
    with (energy / "qrels" / "test.tsv").open("a", encoding="utf-8") as qrels:
        qrels.write("q3\tsolar\t1\n")
    result = _evaluate(runner, energy)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: {energy}/queries.jsonl, line 3: query 'q3' has no text, but qrels/test.tsv judges documents "
        "relevant to it, so it cannot be evaluated (1 such query); give it its text"
    )


def test_qrels_rows_ending_in_a_tab_are_evaluated(runner: CliRunner, energy: Path) -> None:
    (energy / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\t\nq1\tsolar\t1\t\nq2\twind\t1\t\n")
    result = _evaluate(runner, energy)
    assert result.exit_code == 0, result.output
    assert (json.loads(result.stdout)["queries"], json.loads(result.stdout)["results"][0]["recall@100"]) == (2, 1.0)


def test_reusing_an_index_after_the_corpus_changed_names_what_differs(runner: CliRunner, energy: Path) -> None:
    assert _evaluate(runner, energy).exit_code == 0
    # Since the ingest, 'solar' left the corpus and 'hydro' joined it; neither is judged, so no other warning tells.
    _corpus(energy, {"wind": "Offshore wind farms make power.", "hydro": "Dams make hydroelectric power."})
    (energy / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\twind\t1\n", encoding="utf-8")

    result = _evaluate(runner, energy, "--reuse")

    assert result.exit_code == 0, result.output
    said = (
        f"index eval-energy does not hold the corpus of {energy}/corpus.jsonl as it is now: it holds 1 document the "
        "file does not have (e.g. 'solar') and lacks 1 of its 1 document not judged relevant (e.g. 'hydro'); the "
        "figures are over what the index holds, not over this corpus (run without --reuse to bring the index in line "
        "with it)"
    )
    assert json.loads(result.stdout)["warnings"] == [said]
    assert f"warning: {said}" in result.stderr
    assert _evaluate(runner, energy).exit_code == 0  # the ingest brings the index in line
    assert json.loads(_evaluate(runner, energy, "--reuse").stdout)["warnings"] == []


def test_reusing_an_index_does_not_count_records_the_ingest_refused_as_lacking(runner: CliRunner, energy: Path) -> None:
    with (energy / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write(json.dumps({"_id": "typed", "title": 5, "text": "a title that is no string"}) + "\n")
        corpus.write('{"_id": "cut", "text": \n')
    first = _evaluate(runner, energy)
    assert first.exit_code == 0, first.output
    assert len(json.loads(first.stdout)["ingest"]["failed"]) == 2

    result = _evaluate(runner, energy, "--reuse")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []  # running without --reuse could not add them


def test_tune_reusing_an_index_after_the_corpus_changed_says_so(runner: CliRunner, energy: Path) -> None:
    assert _evaluate(runner, energy).exit_code == 0
    with (energy / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write(json.dumps({"_id": "hydro", "text": "Dams make hydroelectric power."}) + "\n")
    args = ["tune", str(energy), "--split", "test", "--engine", "embedded", "--dry-run", "--reuse", "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    said = "does not hold the corpus of"
    assert any(said in line and "lacks 1 of its 1 document not" in line for line in result.stderr.splitlines())


@pytest.mark.parametrize(
    ("methods", "said"),
    [
        ("bm25,default,default", "'default' is named twice; name each configuration once"),
        ("bm25,rrf+graph+recency,rrf+recency+graph", "'rrf+graph+recency' and 'rrf+recency+graph' are one"),
    ],
)
def test_a_configuration_named_twice_is_refused_before_any_ingest(
    runner: CliRunner, energy: Path, methods: str, said: str
) -> None:
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", methods])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '--methods': {said}" in result.stderr
    listed = runner.invoke(main, ["index", "list", "--engine", "embedded"])
    assert listed.exit_code == 0, listed.output
    assert "eval-energy" not in listed.output
