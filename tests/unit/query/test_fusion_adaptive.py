from __future__ import annotations

from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import AdaptiveResult, QueryKind, adaptive, get_fusion, linear, rrf
from esbridge.query.fusion.adaptive import BOOST_KEY, text_contains
from esbridge.query.types import Runs

RUNS: Runs = {
    "bm25": {"a": 10.0, "b": 6.0, "c": 2.0},
    "knn": {"b": 0.9, "d": 0.8, "a": 0.5},
}


def test_natural_language_query_is_plain_base_method() -> None:
    result = adaptive(RUNS, query="how do pumps fail", weights={"knn": 3.0})
    expected = rrf(RUNS, weights={"knn": 3.0})
    assert (result.scores, result.contributions) == (expected.scores, expected.contributions)
    decision = result.decision
    assert decision.kind is QueryKind.NATURAL
    assert decision.identifiers == ()
    assert decision.effective_weights == {"bm25": 1.0, "knn": 3.0}
    assert not decision.lexical_only
    assert decision.boosted == ()


def test_bare_identifier_query_uses_the_lexical_run_only() -> None:
    # rrf over bm25 alone: a 1/61, b 1/62, c 1/63; d (knn only) is left out
    result = adaptive(RUNS, query="PII-2024-0042")
    assert result.scores == pytest.approx({"a": 1 / 61, "b": 1 / 62, "c": 1 / 63})
    assert list(result.scores) == ["a", "b", "c"]
    assert result.decision.lexical_only
    assert result.decision.effective_weights == {"bm25": 1.0, "knn": 0.0}
    assert result.decision.identifiers == ("PII-2024-0042",)
    assert "'bm25' results only" in result.decision.reason


def test_identifier_query_with_empty_lexical_run_falls_back_to_all_retrievers() -> None:
    runs = {"bm25": {}, "knn": {"b": 0.9, "d": 0.8}}
    result = adaptive(runs, query="D40")
    assert result.scores == pytest.approx({"b": 1 / 61, "d": 1 / 62})
    assert not result.decision.lexical_only
    assert result.decision.effective_weights == {"bm25": 2.0, "knn": 1.0}
    assert "found nothing" in result.decision.reason


def test_mixed_query_shifts_weight_to_the_lexical_retriever() -> None:
    # bm25 weight 1 * 2 = 2:
    # a 2/61 + 1/63 = 0.0486599; b 2/62 + 1/61 = 0.0486515; c 2/63 = 0.0317460; d 1/62 = 0.0161290
    result = adaptive(RUNS, query="what does D40 mean")
    assert result.scores == pytest.approx({"a": 2 / 61 + 1 / 63, "b": 2 / 62 + 1 / 61, "c": 2 / 63, "d": 1 / 62})
    assert list(result.scores) == ["a", "b", "c", "d"]
    assert result.decision.kind is QueryKind.MIXED
    assert result.decision.effective_weights == {"bm25": 2.0, "knn": 1.0}


def test_lexical_factor_is_configurable() -> None:
    # bm25 weight 0.5 * 3 = 1.5
    result = adaptive(RUNS, query="what does D40 mean", weights={"bm25": 0.5}, lexical_factor=3.0)
    assert result.decision.effective_weights == {"bm25": 1.5, "knn": 1.0}
    assert result.scores == pytest.approx(rrf(RUNS, weights={"bm25": 1.5}).scores)


def test_documents_holding_the_identifier_verbatim_are_boosted() -> None:
    # mixed query, bm25 weight 2 (see above); top score a = 2/61 + 1/63 = 0.0486599
    # boost 0.5 * 0.0486599 = 0.0243300 goes to d ("D40" verbatim), not to c ("D400")
    # d 1/62 + 0.0243300 = 0.0404590 -> a, b, d, c
    texts = {"a": "pumps", "b": "valves", "c": "the D400 series", "d": "Manual for D40 pumps"}
    result = adaptive(RUNS, query="what does D40 mean", texts=texts)
    top = 2 / 61 + 1 / 63
    assert result.scores == pytest.approx({"a": top, "b": 2 / 62 + 1 / 61, "d": 1 / 62 + 0.5 * top, "c": 2 / 63})
    assert list(result.scores) == ["a", "b", "d", "c"]
    assert result.contributions["d"] == pytest.approx({"knn": 1 / 62, BOOST_KEY: 0.5 * top})
    assert result.decision.boosted == ("d",)


def test_boost_with_a_contains_callable() -> None:
    # identifier query -> bm25 only: a 1/61, b 1/62, c 1/63; c boosted by 1.0 * 1/61 -> c first
    seen: list[tuple[str, str]] = []

    def contains(doc_id: str, identifier: str) -> bool:
        seen.append((doc_id, identifier))
        return doc_id == "c"

    result = adaptive(RUNS, query="D40", contains=contains, boost=1.0)
    assert result.scores == pytest.approx({"c": 1 / 63 + 1 / 61, "a": 1 / 61, "b": 1 / 62})
    assert result.decision.boosted == ("c",)
    assert ("a", "D40") in seen


def test_no_boost_without_identifiers_or_with_boost_zero() -> None:
    texts = {"a": "D40"}
    assert adaptive(RUNS, query="pumps", texts=texts).decision.boosted == ()
    assert adaptive(RUNS, query="D40 pumps", texts=texts, boost=0.0).decision.boosted == ()


def test_base_method_and_its_parameters() -> None:
    result = adaptive(RUNS, query="how do pumps fail", base="linear", base_params={"normalization": "l2"})
    assert result.scores == linear(RUNS, normalization="l2").scores
    assert result.decision.base == "linear"


def test_is_registered_and_callable_like_the_others() -> None:
    fuse = get_fusion("adaptive")
    result = fuse(RUNS, weights=None, query="D40")
    assert isinstance(result, AdaptiveResult)
    assert result.decision.lexical_only


def test_without_a_lexical_run_it_is_the_base_method() -> None:
    result = adaptive(RUNS, query="D40", lexical="sparse")
    assert result.scores == rrf(RUNS).scores
    assert result.decision.effective_weights == {"bm25": 1.0, "knn": 1.0}
    assert result.decision.reason == "query holds identifiers, but there is no 'sparse' run: plain rrf"


def test_empty_runs() -> None:
    result = adaptive({}, query="D40")
    assert result.scores == {}


def test_text_contains_matches_whole_identifiers_across_whitespace() -> None:
    contains = text_contains({"x": "see 30  CFR\n75.1725 (belts)", "y": "os.path.join(a, b)", "z": "xD40"})
    assert contains("x", "30 CFR 75.1725")
    assert contains("y", "os.path.join")
    assert not contains("z", "D40")
    assert not contains("missing", "D40")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"base": "adaptive"}, "cannot use itself"),
        ({"base": "borda"}, "unknown fusion method 'borda'; known: adaptive, dbsf, linear, qpp, rrf"),
        ({"base_params": {"weights": {"bm25": 1.0}}}, "weights directly"),
        ({"base_params": {"kk": 1}}, "'rrf' got unknown parameter"),
        ({"lexical_factor": -1.0}, "lexical_factor"),
        ({"boost": float("inf")}, "boost"),
        ({"texts": {}, "contains": lambda d, i: True}, "either texts or contains"),
        ({"weights": {"sparse": 1.0}}, "without a run"),
        ({"normalization": "l2"}, "'adaptive' got unknown parameter\\(s\\) 'normalization'"),
    ],
)
def test_parameters_are_validated(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        adaptive(RUNS, query="D40 pumps", **params)


def test_boost_key_is_reserved() -> None:
    with pytest.raises(ConfigError, match="reserved"):
        adaptive({"bm25": {}, BOOST_KEY: {}}, query="x")
