from __future__ import annotations

import math
from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import QppModel, QppResult, get_fusion, linear, qpp
from esbridge.query.fusion.qpp import PREDICTORS, default_model, predictors
from esbridge.query.types import Runs

RUNS: Runs = {
    "bm25": {"a": 4.0, "b": 2.0, "c": 1.0},
    "knn": {"b": 0.9, "a": 0.8, "d": 0.7},
}


def test_predictors_by_hand() -> None:
    read = predictors(RUNS["bm25"], RUNS["knn"])
    assert read is not None
    # bm25: gap (4 - 2) / 4, tail 1 / 4, top z (4 - 7/3) / (sqrt(14) / 3) = 5 / sqrt(14)
    # knn: sd sqrt(0.02 / 3); gap 0.1 / sd = sqrt(1.5), drop 0.2 / sd = 2 sqrt(1.5), top z 0.1 / sd = sqrt(1.5)
    # overlap {a, b} of HEAD 10 = 0.2; different first hits
    expected = (0.5, 0.25, 5 / math.sqrt(14), math.sqrt(1.5), 2 * math.sqrt(1.5), math.sqrt(1.5), 0.2, 0.0)
    assert read == pytest.approx(expected)
    assert len(read) == len(PREDICTORS)


def test_predictors_read_only_the_top_ten_and_see_a_shared_first_hit() -> None:
    lexical = {f"x{i}": 100.0 - i for i in range(30)}
    semantic = {"x0": 0.9, "y": 0.5}
    read = predictors(lexical, semantic)
    assert read is not None
    assert read[1] == pytest.approx(91.0 / 100.0)  # the tenth of thirty, not the last
    assert (read[6], read[7]) == (0.1, 1.0)


@pytest.mark.parametrize(
    ("lexical", "semantic"),
    [
        ({"a": 1.0}, {"a": 0.9, "b": 0.8}),  # one hit
        ({"a": 1.0, "b": 0.5}, {}),
        ({"a": 0.0, "b": 0.0}, {"a": 0.9, "b": 0.8}),  # no positive BM25 score: ratios mean nothing
    ],
)
def test_runs_too_short_to_read_have_no_predictors(lexical: dict[str, float], semantic: dict[str, float]) -> None:
    assert predictors(lexical, semantic) is None


def model(**change: Any) -> QppModel:
    """A model that prefers kNN share 0.6 exactly when semantic_gap is above 1, else share 0.4."""
    params: dict[str, Any] = {
        "shares": [0.4, 0.6],
        "center": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        "scale": [1.0] * 8,
        "intercepts": [0.5, 0.5],
        "coefficients": [[0.0, 0.0]] * 3 + [[-1.0, 1.0]] + [[0.0, 0.0]] * 4,
    }
    params.update(change)
    return QppModel.from_params(params)


def test_the_share_with_the_best_prediction_weights_the_fusion() -> None:
    # semantic_gap sqrt(1.5) > 1: share 0.6, so linear with bm25 0.4 and knn 0.6:
    # min-max bm25 a 1, b 1/3, c 0; knn b 1, a 0.5, d 0
    # a 0.4 + 0.3 = 0.7; b 0.4/3 + 0.6 = 0.7333; c 0; d 0
    result = qpp(RUNS, model=model())
    assert isinstance(result, QppResult)
    assert result.decision.share == 0.6
    assert result.decision.effective_weights == pytest.approx({"bm25": 0.4, "knn": 0.6})
    assert result.scores == pytest.approx({"b": 0.4 / 3 + 0.6, "a": 0.7, "c": 0.0, "d": 0.0})
    assert result.scores == linear(RUNS, weights={"bm25": 0.4, "knn": 0.6}).scores
    lead = math.sqrt(1.5) - 1.0
    assert result.decision.predicted == pytest.approx({"0.4": 0.5 - lead, "0.6": 0.5 + lead})
    assert "kNN share 0.6" in result.decision.reason


def test_knn_predictors_do_not_change_with_a_shift_or_scale_of_the_scores() -> None:
    # Another model's cosines: 0.3 + 2 * s for the same list shape.
    moved = {item: 0.3 + 2 * score for item, score in RUNS["knn"].items()}
    assert predictors(RUNS["bm25"], moved) == pytest.approx(predictors(RUNS["bm25"], RUNS["knn"]))


def test_a_knn_list_whose_first_hit_stands_out_less_moves_the_weight_to_bm25() -> None:
    # knn 0.9, 0.89, 0.7: mean 0.83, sd sqrt(0.0254 / 3); gap 0.01 / sd = 0.109 < 1
    close: Runs = {"bm25": RUNS["bm25"], "knn": {"b": 0.9, "a": 0.89, "d": 0.7}}
    read = predictors(close["bm25"], close["knn"])
    assert read is not None and read[3] == pytest.approx(0.01 / math.sqrt(0.0254 / 3))
    result = qpp(close, model=model())
    assert result.decision.share == 0.4
    assert result.decision.effective_weights == pytest.approx({"bm25": 0.6, "knn": 0.4})


def test_configured_weights_multiply_the_chosen_shares() -> None:
    result = qpp(RUNS, weights={"bm25": 2.0}, model=model())
    assert result.decision.effective_weights == pytest.approx({"bm25": 0.8, "knn": 0.6})


def test_equal_predictions_choose_the_share_nearest_the_middle() -> None:
    level = model(shares=[0.4, 0.5, 0.6], intercepts=[0.5, 0.5, 0.5], coefficients=[[0.0, 0.0, 0.0]] * 8)
    assert qpp(RUNS, model=level).decision.share == 0.5


def test_without_readable_runs_it_is_plain_linear_and_says_so() -> None:
    only_bm25: Runs = {"bm25": RUNS["bm25"]}
    result = qpp(only_bm25, model=model())
    assert result.decision.share is None
    assert result.scores == linear(only_bm25).scores
    assert "no 'bm25' and 'knn' runs" in result.decision.reason
    short: Runs = {"bm25": {"a": 1.0}, "knn": RUNS["knn"]}
    assert "too short" in qpp(short, model=model()).decision.reason


def test_other_run_names_can_be_read() -> None:
    renamed: Runs = {"lex": RUNS["bm25"], "dense": RUNS["knn"]}
    result = qpp(renamed, lexical="lex", semantic="dense", model=model())
    assert result.decision.effective_weights == pytest.approx({"lex": 0.4, "dense": 0.6})


def test_the_shipped_model_is_fitted_on_three_collections_and_loads_from_the_package() -> None:
    shipped = default_model()
    assert shipped.shares == (0.2, 0.35, 0.5, 0.65, 0.8)
    assert "scifact@train, cisi, med" in shipped.source
    assert shipped.embedding_model == "BAAI/bge-small-en-v1.5"
    assert QppModel.from_params(shipped.as_params()) == shipped
    assert qpp(RUNS).decision.share in shipped.shares
    assert qpp(RUNS).decision.fitted_for == shipped.embedding_model
    assert get_fusion("qpp") is qpp


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shares": [0.4, 1.5]}, "within \\[0, 1\\]"),
        ({"center": [0.0]}, "for the 8 predictors"),
        ({"intercepts": [0.5]}, "one intercept"),
        ({"scale": [0.0] * 8}, "scales above 0"),
        ({"center": [math.nan] * 8}, "finite"),
        ({"center": ["x"] * 8}, "lists of numbers"),
    ],
)
def test_a_bad_model_is_refused_by_name(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        model(**change)


def test_model_params_must_be_complete_and_known() -> None:
    params = model().as_params()
    del params["scale"]
    with pytest.raises(ConfigError, match="missing \\['scale'\\]"):
        qpp(RUNS, model=params)
    with pytest.raises(ConfigError, match="unknown \\['extra'\\]"):
        QppModel.from_params({**model().as_params(), "extra": 1})
    with pytest.raises(ConfigError, match="fusion method 'qpp' got unknown parameter"):
        qpp(RUNS, base="rrf")


def test_a_configured_model_mapping_fuses_as_the_model_itself_each_time() -> None:
    params = model().as_params()
    first, second = qpp(RUNS, model=params), qpp(RUNS, model=params)
    assert first.decision == second.decision == qpp(RUNS, model=model()).decision
    params["intercepts"] = [0.9, 0.1]  # a different mapping object parses afresh
    assert qpp(RUNS, model=dict(params)).decision.share == 0.4


def test_the_embedding_model_a_model_was_fitted_for_is_kept_and_optional() -> None:
    params = {**model().as_params(), "embedding_model": "org/some-model"}
    assert QppModel.from_params(params).embedding_model == "org/some-model"
    assert qpp(RUNS, model=params).decision.fitted_for == "org/some-model"
    del params["embedding_model"]  # models written before it existed still load
    assert QppModel.from_params(params).embedding_model == ""
