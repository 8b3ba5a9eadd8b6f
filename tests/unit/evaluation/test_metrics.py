from __future__ import annotations

import math

import numpy as np
import pytest

from esbridge.evaluation import metrics

JUDGED = {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1}}


def test_ndcg_recall_mrr_by_hand() -> None:
    ranking = {"q1": {"d1": 3.0, "d4": 2.0, "d2": 1.0}, "q2": {"d5": 2.0, "d3": 1.0}}
    scores = metrics.mean_scores(metrics.qrels(JUDGED), ranking, ["ndcg@10", "recall@100", "mrr@10"])
    # q1: DCG = 1 + 1/log2(4) = 1.5, IDCG = 1 + 1/log2(3); q2: DCG = 1/log2(3), IDCG = 1.
    q1 = 1.5 / (1 + 1 / math.log2(3))
    q2 = 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx((q1 + q2) / 2)
    assert scores["recall@100"] == pytest.approx(1.0)
    assert scores["mrr@10"] == pytest.approx((1 + 0.5) / 2)


def test_a_query_without_answers_counts_as_zero() -> None:
    scores = metrics.mean_scores(metrics.qrels(JUDGED), {"q1": {"d1": 1.0, "d2": 0.5}}, ["ndcg@10"])
    assert scores["ndcg@10"] == pytest.approx(0.5)


def test_compare_gives_p_values_against_the_baseline_only() -> None:
    judged = {f"q{n}": {f"d{n}": 1} for n in range(8)}
    perfect = {f"q{n}": {f"d{n}": 2.0, "x": 1.0} for n in range(8)}
    second = {f"q{n}": {"x": 2.0, f"d{n}": 1.0} for n in range(8)}
    mixed = {q: (perfect if int(q[1:]) % 2 else second)[q] for q in perfect}
    result = metrics.compare(
        metrics.qrels(judged), {"base": second, "best": perfect, "mixed": mixed}, ["mrr@10"], "base"
    )
    assert result["base"].p_values == {}
    assert result["best"].scores["mrr@10"] == pytest.approx(1.0)
    assert result["mixed"].scores["mrr@10"] == pytest.approx(0.75)
    assert 0 <= result["mixed"].p_values["mrr@10"] <= 1
    assert result["best"].p_values["mrr@10"] < 0.05


def test_rankings_without_any_answer_score_zero_instead_of_failing() -> None:
    judged = metrics.qrels(JUDGED)
    nothing: dict[str, dict[str, float]] = {"q1": {}}
    some = {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d3": 1.0}}
    both_empty = metrics.compare(judged, {"base": {}, "other": nothing}, ["ndcg@10"], "base")
    assert both_empty["base"].scores == both_empty["other"].scores == {"ndcg@10": 0.0}
    assert both_empty["other"].p_values == {"ndcg@10": 1.0}
    empty_baseline = metrics.compare(judged, {"base": {}, "other": some}, ["ndcg@10", "recall@100"], "base")
    assert empty_baseline["other"].scores == {"ndcg@10": pytest.approx(1.0), "recall@100": pytest.approx(1.0)}
    assert empty_baseline["other"].p_values["ndcg@10"] == 0.0
    empty_other = metrics.compare(judged, {"base": some, "other": {}}, ["mrr@10"], "base")
    assert empty_other["other"].scores == {"mrr@10": 0.0}


def test_one_query_gets_means_but_no_significance_test() -> None:
    judged = metrics.qrels({"q1": {"d1": 1}})
    result = metrics.compare(judged, {"base": {}, "other": {"q1": {"d1": 1.0}}}, ["mrr@10"], "base")
    assert (result["base"].scores, result["other"].scores) == ({"mrr@10": 0.0}, {"mrr@10": 1.0})
    assert result["other"].p_values == {}


def test_graded_judgements_count_as_trec_eval_counts_them() -> None:
    # Linear gains; the ideal ranking from every judged document (relevance 2, 1, 1), whether retrieved or
    # not; a document judged 0 (or below) is not relevant; a run shorter than k is scored as it is.
    judged = metrics.qrels({"q": {"a": 2, "b": 1, "c": 0, "d": 1, "e": -1}})
    ranking = {"q": {"c": 5.0, "a": 4.0, "e": 3.0, "x": 2.0, "d": 1.0}}
    dcg = 2 / math.log2(3) + 1 / math.log2(6)
    ideal = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert metrics.per_query(judged, ranking, "ndcg@10") == {"q": pytest.approx(dcg / ideal)}
    assert metrics.per_query(judged, ranking, "recall@100") == {"q": pytest.approx(2 / 3)}
    assert metrics.per_query(judged, ranking, "mrr@10") == {"q": pytest.approx(1 / 2)}


def test_the_paired_t_test_is_scipys_on_the_per_query_values() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    docs = [f"d{n}" for n in range(30)]
    graded = {f"q{n}": {str(rng.choice(docs)): int(rng.integers(0, 3)) for _ in range(3)} for n in range(15)}
    positive = {query: judgements for query, judgements in graded.items() if any(judgements.values())}
    judged = metrics.qrels(positive)

    def ranking() -> dict[str, dict[str, float]]:  # some queries unanswered: they score 0, still paired
        answered = [query for query in positive if rng.random() > 0.2]
        return {
            query: {str(doc): 10.0 - rank for rank, doc in enumerate(rng.permutation(docs)[:10])} for query in answered
        }

    base, other = ranking(), ranking()
    result = metrics.compare(judged, {"base": base, "other": other}, ["ndcg@10", "mrr@10"], "base")
    for metric in ("ndcg@10", "mrr@10"):
        before, after = metrics.per_query(judged, base, metric), metrics.per_query(judged, other, metric)
        queries = list(positive)
        reference = stats.ttest_rel([after[q] for q in queries], [before[q] for q in queries]).pvalue
        assert result["other"].p_values[metric] == pytest.approx(reference, abs=1e-6)
        assert result["other"].scores[metric] == pytest.approx(np.mean([after[q] for q in queries]), abs=1e-6)
