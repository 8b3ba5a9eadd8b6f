from __future__ import annotations

import pytest

from esbridge.engines.capabilities import (
    Capabilities,
    elasticsearch_has_knn,
    elasticsearch_native_hybrid,
    opensearch_native_hybrid,
    parse_version,
    server_features,
)
from esbridge.query.native.fusion import NativeFusion
from esbridge.query.native.plan import NativePlan, plan


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3.3.0", (3, 3, 0)), ("2.19.1.0", (2, 19, 1)), ("8.17.1-SNAPSHOT", (8, 17, 1)), ("9", (9, 0, 0))],
)
def test_parse_version(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_version(text) == expected


def test_parse_version_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a version"):
        parse_version("NA")


def test_opensearch_without_neural_search_has_no_native_hybrid() -> None:
    features = opensearch_native_hybrid({"opensearch-knn": "3.3.0"})
    assert features and not any(features.values())


def test_opensearch_features_follow_the_neural_search_version() -> None:
    old = opensearch_native_hybrid({"opensearch-neural-search": "2.11.0"})
    assert old["hybrid_query"] and old["normalization_processor"]
    assert not old["score_ranker_processor"] and not old["z_score"]

    v219 = opensearch_native_hybrid({"opensearch-neural-search": "2.19.1"})
    assert v219["score_ranker_processor"] and v219["hybrid_explain"] and not v219["z_score"]

    v3 = opensearch_native_hybrid({"opensearch-neural-search": "3.1.0.0"})
    assert all(v3.values())


@pytest.mark.parametrize(
    ("version", "licence", "rrf", "linear"),
    [
        ("8.15.0", "enterprise", False, False),
        ("8.16.0", "basic", False, False),
        ("8.16.0", "enterprise", True, False),
        ("8.18.0", "trial", True, True),
        ("9.1.0", "enterprise", True, True),
        ("9.1.0", None, False, False),
    ],
)
def test_elasticsearch_retrievers_need_version_and_licence(
    version: str, licence: str | None, rrf: bool, linear: bool
) -> None:
    features = elasticsearch_native_hybrid(version, licence)
    assert features["rrf_retriever"] is rrf
    assert features["linear_retriever"] is linear
    assert features["retrievers"] is (parse_version(version) >= (8, 14, 0))


def test_elasticsearch_knn_by_version() -> None:
    assert elasticsearch_has_knn("8.4.0")
    assert not elasticsearch_has_knn("7.17.0")


@pytest.mark.parametrize(
    ("version", "l2"),
    [("8.18.2", False), ("8.19.0", True), ("9.0.4", False), ("9.1.0", True), ("9.5.3", True)],
)
def test_elasticsearch_linear_l2_norm_is_planned_only_where_the_server_has_it(version: str, l2: bool) -> None:
    """The linear retriever's ``l2_norm`` normalizer came after the retriever itself: 9.1, backported to
    8.19 (elastic/elasticsearch#128504, #128972); 8.18 and 9.0 refuse it as an unknown normalizer."""
    capabilities = Capabilities(
        distribution="elasticsearch",
        version=version,
        url="http://es",
        knn=True,
        license="trial",
        native_hybrid=elasticsearch_native_hybrid(version, "trial"),
    )
    l2_fusion = NativeFusion("linear", normalization="l2")
    planned = plan(capabilities, l2_fusion)
    if l2:
        assert isinstance(planned, NativePlan)
    else:
        assert isinstance(planned, str) and "l2_norm" in planned and "9.1" in planned
    assert isinstance(plan(capabilities, NativeFusion("linear", normalization="min_max")), NativePlan)


def test_elasticsearch_without_native_fusion_is_told_what_this_server_lacks() -> None:
    """A trial licence on a build without the rank-rrf module (the integ-test zip) must not be told to get a
    trial licence; an expired one must not be told the version is the problem."""
    modules = {"x-pack-core": "9.5.3", "x-pack-security": "9.5.3"}
    lacking_module = Capabilities(
        distribution="elasticsearch",
        version="9.5.3",
        url="http://es",
        knn=True,
        license="trial",
        plugins=modules,
        native_hybrid=elasticsearch_native_hybrid("9.5.3", "trial", modules),
        notes=["module rank-rrf absent: no rrf/linear retrievers"],
    )
    reason = plan(lacking_module, NativeFusion("rrf"))
    assert isinstance(reason, str) and "rank-rrf absent" in reason
    expired = lacking_module.model_copy(
        update={
            "plugins": {},
            "native_hybrid": elasticsearch_native_hybrid("9.5.3", None),
            "notes": ["licence 'trial' is expired: licensed features (rrf/linear retrievers) reported off"],
        }
    )
    reason = plan(expired, NativeFusion("linear"))
    assert isinstance(reason, str) and "'trial' is expired" in reason


def test_elasticsearch_retrievers_are_found_under_the_module_name_a_default_distribution_reports() -> None:
    """The rrf and linear retrievers live in the module a default distribution loads as ``rank-rrf`` (the name
    in its plugin descriptor, x-pack/plugin/rank-rrf/build.gradle; startup logs: "loaded module [rank-rrf]"),
    which is the name ``GET _nodes/_local/plugins`` gives."""
    names = ("analysis-common", "lang-painless", "rank-rrf", "reindex", "x-pack-core", "x-pack-security")
    modules = dict.fromkeys(names, "9.2.1")
    features = elasticsearch_native_hybrid("9.2.1", "trial", modules)
    assert features["rrf_retriever"] and features["linear_retriever"] and features["rrf_weights"]
    without = elasticsearch_native_hybrid("9.2.1", "trial", {name: "9.2.1" for name in names if name != "rank-rrf"})
    assert not without["rrf_retriever"] and not without["linear_retriever"]


@pytest.mark.parametrize(
    ("analysis", "reindex"),
    [
        ("CommonAnalysisModulePlugin", "ReindexModulePlugin"),
        ("CommonAnalysisPlugin", "ReindexPlugin"),  # OpenSearch 2.x's names (the 2.19 node of scripts/engines)
    ],
)
def test_classpath_modules_are_recognised_by_their_class_names(analysis: str, reindex: str) -> None:
    """A node started from classpath jars names its plugins by class, version "NA" (docs/engines.md)."""
    from esbridge.engines.opensearch import node_components

    classes = (
        f"org.opensearch.analysis.common.{analysis}",
        f"org.opensearch.index.reindex.{reindex}",
        "org.opensearch.knn.plugin.KNNPlugin",
    )
    components = [{"name": name, "classname": name, "version": "NA"} for name in classes]
    plugins = node_components({"nodes": {"node-1": {"plugins": components}}}, "2.19.1")
    assert plugins == {"analysis-common": "2.19.1", "opensearch-knn": "2.19.1", "reindex": "2.19.1"}
    assert server_features(plugins) == {"text_analysis": True, "reindex": True}
