"""``esbridge eval`` on BEIR folders a user brings: judgements that cannot all be scored are named, never lost
silently. The embedded engine with a hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.errors import SourceError
from esbridge.evaluation.dataset import judged_queries

HEADER = "query-id\tcorpus-id\tscore\n"


def _qrels(folder: Path, rows: str) -> None:
    (folder / "qrels" / "test.tsv").write_text(HEADER + rows, encoding="utf-8")


def test_a_judged_query_missing_from_the_queries_file_is_refused_naming_the_qrels_line(energy: Path) -> None:
    _qrels(energy, "q1\tsolar\t1\nq2\twind\t1\nq9\tsolar\t1\nq8\twind\t2\n")
    with pytest.raises(SourceError) as raised:
        judged_queries(energy, "test")
    message = str(raised.value)
    assert message.startswith(f"{energy}/qrels/test.tsv, line 4: query 'q9' judges a document relevant")
    assert message.endswith(f"is not in {energy}/queries.jsonl, so it cannot be run (2 such queries)")


def test_queries_that_judge_nothing_relevant_are_counted_in_a_warning(runner: CliRunner, energy: Path) -> None:
    # q2 judges its only document 0, q7 (not in queries.jsonl) only -1: neither has anything to find.
    _qrels(energy, "q1\tsolar\t1\nq2\twind\t0\nq7\twind\t-1\n")
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["queries"] == 1
    said = (
        "2 queries of qrels/test.tsv judge no document above 0 (e.g. 'q2', 'q7'); not evaluated, as a query with "
        "nothing relevant has no ideal ranking"
    )
    assert summary["warnings"] == [said]
    assert f"warning: {said}" in result.stderr


def test_a_relevant_document_without_title_or_text_is_named(runner: CliRunner, energy: Path) -> None:
    with (energy / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write(json.dumps({"_id": "blank", "title": None, "text": "  "}) + "\n")
        corpus.write(json.dumps({"_id": "blank", "title": "A later duplicate", "text": "is not ingested"}) + "\n")
    _qrels(energy, "q1\tsolar\t1\nq2\twind\t1\nq2\tblank\t1\n")
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["results"][0]["recall@100"] == 0.75
    assert (
        "qrels/test.tsv judges 1 document relevant whose record has neither title nor text (e.g. 'blank'); "
        "no configuration can find it"
    ) in summary["warnings"]


def test_tune_counts_the_queries_it_leaves_out_too(runner: CliRunner, energy: Path) -> None:
    _qrels(energy, "q1\tsolar\t1\nq2\twind\t1\nq2\tsolar\t0\nq3\twind\t0\n")
    with (energy / "queries.jsonl").open("a", encoding="utf-8") as queries:
        queries.write(json.dumps({"_id": "q3", "text": "wind"}) + "\n")
    args = ["tune", str(energy), "--split", "test", "--engine", "embedded", "--dry-run", "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    said = "1 query of qrels/test.tsv judges no document above 0 (e.g. 'q3'); not evaluated"
    assert any(warning.startswith(said) for warning in json.loads(result.stdout)["warnings"])


def test_nothing_found_after_an_ingest_does_not_blame_the_index(runner: CliRunner, energy: Path) -> None:
    _qrels(energy, "q1\twind\t1\nq2\tsolar\t1\n")  # each query shares no word with the document it judges
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == [
        "no configuration returned any judged document of energy test from index eval-energy, into which its "
        "corpus was just ingested"
    ]
