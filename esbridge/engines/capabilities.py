"""What an engine can do, and the pure rules that derive it from versions, plugins and licences.

The rules are tables of (feature, minimum version) with the documentation they come from, so a
newcomer can check each claim; the probe in each adapter only gathers the facts they take.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Distribution = Literal["opensearch", "elasticsearch", "embedded"]
Version = tuple[int, int, int]


class Capabilities(BaseModel):
    """The answer of ``esbridge info``: what the engine at ``url`` is and offers."""

    model_config = ConfigDict(frozen=True)

    distribution: Distribution
    version: str
    url: str
    cluster_name: str | None = None
    health: str | None = None
    knn: bool = Field(description="vector (kNN) search is available")
    plugins: dict[str, str] = Field(default_factory=dict, description="plugin/module name -> version")
    license: str | None = Field(default=None, description="Elasticsearch licence type")
    native_hybrid: dict[str, bool] = Field(
        default_factory=dict, description="server-side hybrid features, one boolean each"
    )
    features: dict[str, bool] = Field(
        default_factory=dict,
        description="other server features esbridge uses: text_analysis (the analyzers of its mapping), reindex",
    )
    notes: list[str] = Field(default_factory=list, description="why a feature is off, where known")


def parse_version(text: str) -> Version:
    """``'3.3.0'``, ``'8.17.1-SNAPSHOT'``, ``'2.19.1.0'`` -> (major, minor, patch)."""
    match = re.match(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    if not match:
        raise ValueError(f"not a version: {text!r}")
    major, minor, patch = (int(part) if part else 0 for part in match.groups())
    return (major, minor, patch)


# neural-search features by the neural-search (= OpenSearch) version that introduced them.
# Sources: docs.opensearch.org search-pipelines/normalization-processor ("Introduced 2.10"),
# score-ranker-processor ("Introduced 2.19"), query-dsl/compound/hybrid, search-pipelines/explanation
# -processor ("Introduced 2.19"); z_score normalization from the neural-search 3.0.0 release notes;
# weights in the score-ranker-processor's RRF from the 3.1.0 release notes (#1322).
OPENSEARCH_NEURAL_FEATURES: Mapping[str, Version] = {
    "hybrid_query": (2, 10, 0),
    "normalization_processor": (2, 10, 0),
    "score_ranker_processor": (2, 19, 0),
    "hybrid_explain": (2, 19, 0),
    "pagination_depth": (2, 19, 0),
    "z_score": (3, 0, 0),
    "rrf_weights": (3, 1, 0),
}

NEURAL_SEARCH_PLUGIN = "opensearch-neural-search"
KNN_PLUGIN = "opensearch-knn"
ANALYSIS_MODULE = "analysis-common"
REINDEX_MODULE = "reindex"
# The rrf and linear retrievers' module, by its plugin descriptor name (x-pack/plugin/rank-rrf/build.gradle),
# which is what GET _nodes reports; unlike x-pack-core or x-pack-security it has no "x-pack-" prefix.
RRF_MODULE = "rank-rrf"


def server_features(modules: Mapping[str, str], *, text_analysis: bool | None = None) -> dict[str, bool]:
    """Features that live in modules a stripped-down server build may lack.

    ``text_analysis``: the language analyzers, pattern tokenizer and word-delimiter filter of
    esbridge's mapping (the ``analysis-common`` module, unless ``text_analysis`` gives the answer the
    server itself gave when asked to use them). ``reindex``: server-side ``_reindex``.
    An empty module list means the server did not say, and everything is assumed present.
    """
    if not modules:
        return {"text_analysis": True if text_analysis is None else text_analysis, "reindex": True}
    analysis = ANALYSIS_MODULE in modules if text_analysis is None else text_analysis
    return {"text_analysis": analysis, "reindex": REINDEX_MODULE in modules}


def opensearch_native_hybrid(plugins: Mapping[str, str]) -> dict[str, bool]:
    """Native hybrid features an OpenSearch node offers, given its plugins and their versions."""
    plugin_version = plugins.get(NEURAL_SEARCH_PLUGIN)
    if plugin_version is None:
        return dict.fromkeys(OPENSEARCH_NEURAL_FEATURES, False)
    version = parse_version(plugin_version)
    return {feature: version >= since for feature, since in OPENSEARCH_NEURAL_FEATURES.items()}


# Elasticsearch: (minimum version, licences that allow it). Sources: docs/elasticsearch.md, which
# cites the Elasticsearch reference and subscription pages for each line.
_PAID = frozenset({"enterprise", "trial"})
ELASTICSEARCH_FEATURES: Mapping[str, tuple[Version, frozenset[str] | None]] = {
    "knn_search": ((8, 4, 0), None),
    "retrievers": ((8, 14, 0), None),
    "rrf_retriever": ((8, 16, 0), _PAID),
    "linear_retriever": ((8, 18, 0), _PAID),
    # Per-retriever weights inside rrf: elasticsearch-specification PR #5502 (October 2025, 9.2 docs).
    "rrf_weights": ((9, 2, 0), _PAID),
    # The linear retriever's l2_norm normalizer: elastic/elasticsearch#128504 (9.1), backported to 8.19
    # (#128972); 9.0 lacks it (see _LINEAR_L2_NORM_GAP).
    "linear_l2_norm": ((8, 19, 0), _PAID),
}
_LINEAR_L2_NORM_GAP = ((9, 0, 0), (9, 1, 0))


def elasticsearch_native_hybrid(
    version_text: str, license_type: str | None, modules: Mapping[str, str] | None = None
) -> dict[str, bool]:
    """Server-side hybrid features of an Elasticsearch server of this version, licence and modules."""
    version = parse_version(version_text)
    licence = (license_type or "").lower()
    features = {}
    for feature, (since, licences) in ELASTICSEARCH_FEATURES.items():
        if feature == "knn_search":
            continue
        features[feature] = version >= since and (licences is None or licence in licences)
    if _LINEAR_L2_NORM_GAP[0] <= version < _LINEAR_L2_NORM_GAP[1]:
        features["linear_l2_norm"] = False
    if modules and RRF_MODULE not in modules:
        for feature in ("rrf_retriever", "linear_retriever", "rrf_weights", "linear_l2_norm"):
            features[feature] = False
    return features


def elasticsearch_has_knn(version_text: str) -> bool:
    return parse_version(version_text) >= ELASTICSEARCH_FEATURES["knn_search"][0]
