"""esbridge bench keeps going when searches fail, and counts the failures per mode with when they happened.

On the embedded engine (no server): an index that does not exist fails every search, one that holds the
records fails none.
"""

from __future__ import annotations

from pathlib import Path

from esbridge.config import load_settings
from esbridge.engines import connect
from esbridge.evaluation.latency_bench import measure
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder

QUERIES = ["sunlight electricity", "wind power", "bread dough"]


def test_failed_searches_are_counted_per_mode_and_the_run_goes_on(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, index="nothing-here")
    report = measure(settings, QUERIES, HashingEmbedder(), modes=("bm25", "knn", "embed", "hybrid"), warmup=0)
    assert report.errors_by_mode() == {"bm25": 3, "knn": 3, "hybrid": 3}
    assert [failure.at_s for failure in report.failures] == sorted(failure.at_s for failure in report.failures)
    assert all("nothing-here" in failure.reason for failure in report.failures)
    assert list(report.modes) == ["embed"]  # embedding still measured, searches not
    summary = report.as_json()
    assert summary["errors"] == {"bm25": 3, "knn": 3, "hybrid": 3}
    assert summary["last_error_at_s"] == report.failures[-1].at_s


def test_a_healthy_index_reports_no_failures_and_no_partial_answers(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, index="notes")
    engine = connect(settings)
    try:
        load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    finally:
        engine.close()
    report = measure(settings, QUERIES, HashingEmbedder(), modes=("bm25", "knn", "embed", "hybrid"), warmup=0)
    assert report.failures == [] and report.partial == []
    assert {mode: values["n"] for mode, values in report.modes.items()} == {
        "bm25": 3,
        "embed": 3,
        "knn": 3,
        "hybrid": 3,
    }


class _OtherModel(HashingEmbedder):
    name = identity = "hashing-16"
    dimension = 16


def test_hybrid_answers_from_one_retriever_are_counted_as_partial(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, index="notes")
    engine = connect(settings)
    try:
        load_records(engine, "notes", HashingEmbedder(), tmp_path, RECORDS)
    finally:
        engine.close()
    # Query vectors of another size: every kNN search fails, so each hybrid search is answered by BM25 alone.
    report = measure(settings, QUERIES, _OtherModel(), modes=("knn", "hybrid"), warmup=0)
    assert report.errors_by_mode() == {"knn": 3}
    assert report.modes["hybrid"]["n"] == 3
    assert [failure.mode for failure in report.partial] == ["hybrid"] * 3
    assert all(failure.reason.startswith("answered lexical-only; ") for failure in report.partial)
    assert report.as_json()["partial"] == 3
