from __future__ import annotations

import re

import pytest

from esbridge.config.pipeline import GraphSettings, PipelineSettings, RerankSettings
from esbridge.errors import ConfigError
from esbridge.evaluation.methods import METHODS, Configuration, configuration, configurations


def test_fused_methods_set_method_params_and_equal_weights() -> None:
    rrf = configuration("rrf")
    assert (rrf.pipeline.fusion, rrf.pipeline.fusion_params, rrf.pipeline.weights) == (
        "rrf",
        {"k": 60},
        {"bm25": 1.0, "knn": 1.0},
    )
    assert configuration("linear-z").pipeline.fusion_params == {"normalization": "z_score"}
    assert (rrf.graph, rrf.recency, rrf.native) == (False, False, False)


def test_single_retriever_methods_run_only_that_retriever() -> None:
    assert configuration("bm25").pipeline.retrievers == ["bm25"]
    assert configuration("knn").pipeline.retrievers == ["knn"]


def test_switches_turn_graph_and_recency_on() -> None:
    made = configuration("rrf+graph+recency")
    assert (made.name, made.graph, made.recency) == ("rrf+graph+recency", True, True)


def test_default_is_the_product_ranking_over_the_configured_rest() -> None:
    base = PipelineSettings(fusion="dbsf", weights={"bm25": 3.0, "knn": 1.0}, graph=GraphSettings(hops=2))
    default = configuration("default", base)
    product = PipelineSettings()
    assert (default.pipeline.fusion, default.pipeline.weights, default.pipeline.fusion_params) == (
        product.fusion,
        product.weights,
        product.fusion_params,
    )
    assert default.pipeline.graph.hops == 2
    assert (default.graph, default.recency) == (None, None)
    assert configuration("configured", base).pipeline == base


def test_rerank_is_on_only_when_switched_on_or_configured() -> None:
    assert configuration("default+rerank").pipeline.rerank.enabled
    assert not configuration("default").pipeline.rerank.enabled
    configured = PipelineSettings(rerank=RerankSettings(enabled=True, top=50))
    assert configuration("default", configured).pipeline.rerank.top == 50
    assert configuration("default", configured).pipeline.rerank.enabled
    assert not configuration("bm25", configured).pipeline.rerank.enabled
    assert configuration("bm25+graph+rerank", configured).pipeline.rerank.enabled


def test_native_is_flagged() -> None:
    assert configuration("native").native


def test_unknown_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown method 'bm42'.*rrf"):
        configuration("bm42")
    with pytest.raises(ConfigError, match="unknown switch 'rescore'"):
        configuration("rrf+rescore")
    with pytest.raises(ConfigError, match="no method"):
        configurations(" , ")


def test_list_keeps_order() -> None:
    assert [c.name for c in configurations("knn, bm25,rrf")] == ["knn", "bm25", "rrf"]


@pytest.mark.parametrize(
    ("names", "said"),
    [
        ("knn, bm25,knn,rrf", "'knn' is named twice"),
        ("bm25,default,default", "'default' is named twice"),
        ("bm25,rrf+graph+recency,rrf+recency+graph", "'rrf+graph+recency' and 'rrf+recency+graph' are one"),
        ("rrf+graph,rrf+graph+graph", "'rrf+graph' and 'rrf+graph+graph' are one configuration"),
    ],
)
def test_a_configuration_named_twice_is_refused_naming_it(names: str, said: str) -> None:
    # Collapsed into one row, the list would silently not be the one given; two spellings would be two equal rows.
    with pytest.raises(ConfigError, match=re.escape(said)):
        configurations(names)


def test_table_is_extensible() -> None:
    METHODS["rrf-k10"] = lambda name, base: Configuration(name, base.model_copy(update={"fusion_params": {"k": 10}}))
    try:
        assert configuration("rrf-k10").pipeline.fusion_params == {"k": 10}
    finally:
        del METHODS["rrf-k10"]


def test_native_methods_fuse_on_the_engine_what_their_client_twin_fuses() -> None:
    base = PipelineSettings(fusion="dbsf", weights={"bm25": 2.0, "knn": 1.0})
    native = configuration("native", base)
    native_rrf = configuration("native-rrf", base)
    configured = configuration("native-configured", base)
    # The default is qpp, whose weights change per query; an engine runs its fixed-weight base.
    assert PipelineSettings().fusion == "qpp"
    assert (native.native, native.pipeline.fusion, native.pipeline.fusion_params) == (True, "linear", {})
    assert (native_rrf.native, native_rrf.pipeline.fusion, native_rrf.pipeline.fusion_params) == (
        True,
        "rrf",
        {"k": 60},
    )
    assert (configured.native, configured.pipeline.fusion, configured.pipeline.weights["bm25"]) == (True, "dbsf", 2.0)
    assert configuration("rrf", base).native is False
