from __future__ import annotations

import pytest

from esbridge.evaluation.latency_bench import percentiles, ratios
from esbridge.evaluation.methods import configuration
from esbridge.evaluation.report import score, table
from esbridge.evaluation.runner import ConfigurationRuns

JUDGED = {f"q{n}": {f"d{n}": 1} for n in range(6)}


def test_rows_keep_order_mark_unavailable_and_test_against_the_baseline() -> None:
    first = {q: {next(iter(docs)): 2.0, "x": 1.0} for q, docs in JUDGED.items()}
    second = {q: {"x": 2.0, next(iter(docs)): 1.0} for q, docs in JUDGED.items()}
    outcomes = [
        ConfigurationRuns(configuration("bm25"), top=second, deep=second),
        ConfigurationRuns(configuration("native"), unavailable="not available on this engine: no plugin"),
        ConfigurationRuns(configuration("rrf"), top=first, deep=first),
    ]
    rows = score(JUDGED, outcomes)
    assert [row.name for row in rows] == ["bm25", "native", "rrf"]
    assert rows[0].scores["mrr@10"] == pytest.approx(0.5)
    assert rows[2].scores == pytest.approx({"ndcg@10": 1.0, "mrr@10": 1.0, "recall@100": 1.0})
    assert rows[2].p_values["mrr@10"] < 0.05
    assert rows[2].p_values["recall@100"] == 1.0
    assert rows[1].as_json() == {"name": "native", "unavailable": "not available on this engine: no plugin"}
    assert set(rows[2].as_json()) == {"name", "ndcg@10", "recall@100", "mrr@10", "p_vs_baseline"}
    text = table(rows)
    assert "1.0000*" in text
    assert "not available on this engine: no plugin" in text
    assert "* differs from bm25 with p < 0.05" in text
    alike = table(score(JUDGED, [ConfigurationRuns(configuration(n), top=first, deep=first) for n in ("bm25", "rrf")]))
    assert "no configuration differs from bm25 with p < 0.05" in alike


def test_percentiles_and_ratios() -> None:
    found = percentiles([float(n) for n in range(1, 101)])
    # nearest rank: 95 of the 100 samples are at or below p95; p99 of 100 samples is not their maximum
    assert found == {"p50": 50.5, "p95": 95.0, "p99": 99.0, "n": 100}
    assert percentiles([float(n) for n in range(1, 21)]) == {"p50": 10.5, "p95": 19.0, "p99": 20.0, "n": 20}
    assert percentiles([3.0]) == {"p50": 3.0, "p95": 3.0, "p99": 3.0, "n": 1}
    found_ratios = ratios({"bm25": 4.0, "knn": 5.0, "embed": 10.0, "hybrid": 18.0})
    assert found_ratios["hybrid / bm25"] == 4.5
    assert found_ratios["hybrid / (1.1 x max(bm25, knn) + embed)"] == pytest.approx(18.0 / 15.5, abs=1e-3)
    assert "native / hybrid" not in found_ratios
