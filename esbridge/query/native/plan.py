"""Choosing the native path for one search, and building its request body for the engine at hand.

``plan`` decides; the orchestrator executes. A plan exists only when the engine's probed capabilities
allow the fusion configuration; otherwise ``plan`` says why, so that ``auto`` mode can fuse client-side
and ``native`` mode can warn that it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from esbridge.engines.base import JSON, Dialect
from esbridge.engines.capabilities import Capabilities
from esbridge.query.models import NativeDetails
from esbridge.query.native import elasticsearch, opensearch
from esbridge.query.native.fusion import NativeFusion


@dataclass(frozen=True)
class NativePlan:
    """A fusion the engine runs itself, with the features it was checked against."""

    dialect: Dialect
    fusion: NativeFusion
    features: Mapping[str, bool]

    def body(
        self,
        bm25: Mapping[str, Any],
        knn: Mapping[str, Any],
        *,
        size: int,
        source_fields: Sequence[str],
        explain: bool = False,
    ) -> JSON:
        """The ``_search`` body fusing the retrievers' own bodies ``bm25`` and ``knn`` on the engine."""
        if self.dialect == "opensearch":
            pipeline = opensearch.search_pipeline(self.fusion, self.features, explain=explain)
            return opensearch.hybrid_body(
                bm25,
                knn,
                size=size,
                pipeline=pipeline,
                features=self.features,
                source_fields=source_fields,
                explain=explain,
            )
        return elasticsearch.retriever_body(self.fusion, bm25, knn, size=size, source_fields=source_fields)

    def form(self, *, explain: bool) -> tuple[object, ...]:
        """What an engine's refusal of this plan's request can depend on: the features the body uses (weights only
        by whether they differ), not the query, its filters or the weights' values."""
        fusion = self.fusion
        return (self.dialect, fusion.method, fusion.normalization, fusion.combination, fusion.equal_weights, explain)

    def describe(self, *, used: bool, explain: bool = False) -> NativeDetails:
        """What the engine was asked to do, for ``details.native`` of a response (``explain`` as in ``body``)."""
        fusion = self.fusion
        described = NativeDetails(used=used, engine=self.dialect, method=fusion.method, weights=list(fusion.weights))
        if self.dialect == "opensearch":
            described.search_pipeline = opensearch.search_pipeline(fusion, self.features, explain=explain)
        elif fusion.method == "rrf":
            described.rank_constant = fusion.rank_constant
        else:
            described.normalizer = elasticsearch.NORMALIZERS[fusion.normalization]
        return described


def plan(capabilities: Capabilities, fusion: NativeFusion) -> NativePlan | str:
    """The native plan for ``fusion`` on this engine, or why there is none."""
    features = capabilities.native_hybrid
    if capabilities.distribution == "opensearch":
        reason = opensearch.unavailable(fusion, features)
    elif capabilities.distribution == "elasticsearch":
        reason = elasticsearch.unavailable(fusion, features)
        # The probe's notes say which requirement this server misses (licence, its state, the rank-rrf module).
        lacking = [note for note in capabilities.notes if note.startswith("licence") or "retrievers" in note]
        if reason is not None and lacking:
            reason = f"{reason}; this server: {'; '.join(lacking)}"
    else:
        reason = f"the {capabilities.distribution} engine has no server-side fusion"
    if reason is not None:
        return reason
    dialect: Dialect = "opensearch" if capabilities.distribution == "opensearch" else "elasticsearch"
    return NativePlan(dialect, fusion, dict(features))


def explanations(raw: Mapping[str, Any]) -> dict[str, Any]:
    """id -> the engine's ``_explanation`` of each hit of a native answer that carries one."""
    hits = raw.get("hits", {}).get("hits", [])
    return {str(hit["_id"]): hit["_explanation"] for hit in hits if "_id" in hit and "_explanation" in hit}
