"""Fusing the runs of several retrievers into one ranking.

Importing this package registers the built-in methods (``rrf``, ``linear``, ``dbsf``, ``adaptive``, ``qpp``) in
``FUSION_METHODS``; look them up with ``get_fusion(name)``. See docs/fusion.md.
"""

from esbridge.query.fusion.adaptive import AdaptiveDecision, AdaptiveResult, adaptive
from esbridge.query.fusion.context import FusionContext, FusionTraits, fuse, fusion_traits, traits_of
from esbridge.query.fusion.dbsf import dbsf
from esbridge.query.fusion.linear import linear
from esbridge.query.fusion.qpp import QppDecision, QppModel, QppResult, qpp
from esbridge.query.fusion.query_kind import QueryClassification, QueryKind, classify_query
from esbridge.query.fusion.registry import FUSION_METHODS, FusionMethod, get_fusion, register_fusion
from esbridge.query.fusion.rrf import DEFAULT_RANK_CONSTANT, rrf

__all__ = [
    "DEFAULT_RANK_CONSTANT",
    "FUSION_METHODS",
    "AdaptiveDecision",
    "AdaptiveResult",
    "FusionContext",
    "FusionMethod",
    "FusionTraits",
    "QppDecision",
    "QppModel",
    "QppResult",
    "QueryClassification",
    "QueryKind",
    "adaptive",
    "classify_query",
    "dbsf",
    "fuse",
    "fusion_traits",
    "get_fusion",
    "linear",
    "qpp",
    "register_fusion",
    "rrf",
    "traits_of",
]
