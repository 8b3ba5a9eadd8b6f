"""One call for every fusion method: context for those that declare it, none for the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import FusionContext, fuse, fusion_traits, get_fusion, traits_of
from esbridge.query.fusion.rrf import rrf
from esbridge.query.types import FusionResult, Runs

RUNS = {"bm25": {"a": 3.0, "b": 1.0}, "knn": {"b": 0.9}}


def test_a_method_without_a_context_keyword_is_called_without_it() -> None:
    def plain(runs: Runs, *, weights: Mapping[str, float] | None = None, **params: Any) -> FusionResult:
        assert "context" not in params  # it would otherwise arrive among the method's own parameters
        return FusionResult({"x": float(len(params))})

    result = fuse(plain, RUNS, weights=None, context=FusionContext(query="q"), params={"k": 1})
    assert result.scores == {"x": 1.0}


def test_a_method_that_declares_context_gets_the_searchs() -> None:
    def reads(runs: Runs, *, weights: Any = None, context: FusionContext | None = None) -> FusionResult:
        assert context is not None
        return FusionResult({context.query: 1.0})

    assert fuse(reads, RUNS, weights=None, context=FusionContext(query="solar"), params={}).scores == {"solar": 1.0}


def test_builtins_are_called_the_same_way_with_the_same_result_as_directly() -> None:
    direct = rrf(RUNS, weights={"bm25": 2.0}, k=10)
    through = fuse(get_fusion("rrf"), RUNS, weights={"bm25": 2.0}, context=FusionContext(), params={"k": 10})
    assert through == direct
    # hand-computed: a = 2/(10+1); b = 2/(10+2) + 1/(10+1)
    assert through.scores["a"] == 2 / 11
    assert abs(through.scores["b"] - (2 / 12 + 1 / 11)) < 1e-15


def test_traits_say_what_a_method_needs_before_retrieval() -> None:
    adaptive = traits_of(get_fusion("adaptive"))
    assert adaptive.reads_texts
    assert adaptive.lexical_only is not None
    assert adaptive.lexical_only("PII-2024-0042") and not adaptive.lexical_only("what does the code mean")
    assert traits_of(get_fusion("qpp")) == traits_of(rrf)  # the plain defaults

    @fusion_traits(reads_texts=True)
    def texts(runs: Runs, **params: Any) -> FusionResult:
        return FusionResult({})

    assert traits_of(texts).reads_texts and traits_of(texts).lexical_only is None


def test_context_text_joins_the_stored_fields_the_retrievers_returned() -> None:
    context = FusionContext(sources={"a": {"title": "Solar", "body": "panels", "path": "n/a.md", "other": "x"}})
    assert context.text("a") == "Solar panels  n/a.md"
    assert context.text("missing") == "   "


def test_a_method_that_returns_no_fusion_result_is_a_config_error_naming_it() -> None:
    def plain_dict(runs: Runs, *, weights: Any = None, **params: Any) -> Any:
        return {"a": 1.0}  # a plugin that returns bare scores instead of a FusionResult

    with pytest.raises(ConfigError, match=r"plain_dict.*returned dict.*FusionResult"):
        fuse(plain_dict, RUNS, weights=None, context=FusionContext(query="q"), params={})
