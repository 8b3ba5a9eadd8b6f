"""Planning one search: what the request asks of the pipeline, resolved against the settings, before any
engine request. Pure functions of the request and the configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from esbridge import errors
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import Dialect
from esbridge.query import bodies
from esbridge.query.fusion import get_fusion, traits_of
from esbridge.query.grouping import group_fields
from esbridge.query.models import SearchRequest
from esbridge.query.retrievers import RetrievalContext
from esbridge.text import some_of


@dataclass(frozen=True)
class Plan:
    """What one request asks of the pipeline, resolved against the settings."""

    method_name: str
    weights: dict[str, float]
    params: dict[str, Any]
    top_k: int
    lexical_only: bool
    """the fusion method answers this query from the lexical retrievers alone (or no vector field is mapped)"""
    context: RetrievalContext
    semantic_skipped: bool = False
    """lexical-only by the fusion method's choice (a vector field is mapped): the semantic retrievers can still
    answer when the lexical ones do not"""


def plan_search(
    request: SearchRequest,
    pipeline: PipelineSettings,
    *,
    dialect: Dialect,
    num_candidates: int,
    fields: FieldMap,
    reranks: bool,
) -> Plan:
    """The fusion method, weights and parameters, candidates per retriever, and the retrieval context."""
    method_name = request.fusion or pipeline.fusion
    traits = traits_of(get_fusion(method_name))
    top_k = pipeline.top_k(request.top_n)
    reads_texts = traits.reads_texts or (reranks and request.rerank is not False)
    context = RetrievalContext(
        dialect,
        request.query,
        top_k,
        request.filters,
        num_candidates,
        source_fields=(*source_fields(fields, reads_texts), *(group_fields(fields) if request.group else ())),
        fields=fields,
        knn_types=tuple(pipeline.knn_per_type),
        k_per_type=pipeline.knn_k_per_type,
    )
    skipped = fields.vector is not None and traits.lexical_only is not None and traits.lexical_only(request.query)
    return Plan(
        method_name,
        weights_for(request, pipeline),
        dict(pipeline.fusion_params) if method_name == pipeline.fusion else {},
        top_k,
        fields.vector is None or skipped,
        context,
        semantic_skipped=skipped,
    )


def search_time_s(pipeline: PipelineSettings, reranks: bool, given_s: float | None = None) -> float:
    """A search's time: its stages' own budgets added up (the query's embedding, the first retrieval round and the
    deeper rounds' shared one, re-ranking when a re-ranker is configured), or ``given_s`` (the time its caller
    has for it) when that is less. The graph stage's link reads and grouping have what is left of it."""
    retrieval = max(pipeline.timeout_s(name) for name in pipeline.retrievers)
    own = pipeline.embed_timeout_s + 2 * retrieval + (pipeline.rerank.timeout_s if reranks else 0.0)
    return own if given_s is None else max(min(own, given_s), 0.0)


def source_fields(fields: FieldMap, reads_texts: bool) -> Sequence[str]:
    """The stored fields a search asks for: the chunk texts only when a stage reads them."""
    if fields is DEFAULT_FIELD_MAP:
        return bodies.RESULT_FIELDS if reads_texts else bodies.DISPLAY_FIELDS
    return tuple(fields.stored_fields(with_texts=reads_texts))


def weights_for(request: SearchRequest, pipeline: PipelineSettings) -> dict[str, float]:
    """The configured weights with the request's over them; a name that is no retriever of this pipeline
    (a typo would otherwise rank as if no weight had been given) or weights that are all 0 are errors."""
    asked = request.weights or {}
    unknown = sorted(set(asked) - set(pipeline.retrievers))
    if unknown:
        raise errors.ConfigError(
            f"weights name no retriever of this pipeline: {some_of(unknown)}; "
            f"its retrievers: {', '.join(pipeline.retrievers)}"
        )
    weights = {**pipeline.weights, **asked}
    if not any(weights.get(name, 1.0) > 0 for name in pipeline.retrievers):
        raise errors.ConfigError("at least one retriever's weight must be above 0")
    return weights


def query_cut(request: SearchRequest, pipeline: PipelineSettings, fields: FieldMap) -> str | None:
    """The warning for a query too long for the engine's clause limit, which BM25 then searched in part."""
    cut = bodies.bm25_text(request.query, fields.text, fields.exact)
    if "bm25" not in pipeline.retrievers or cut == request.query:
        return None
    limit = bodies.MAX_CLAUSES // (len(fields.text) + len(fields.exact))
    kept = len(cut.split())  # the query's distinct words, as many as fit
    if kept < limit:  # every one of them fit: only repeats were left out
        return (
            "the query repeats words beyond the engine's clause limit: BM25 searched each of its "
            f"{kept} distinct word(s) once"
        )
    return (
        f"the query is too long for the engine's clause limit: BM25 searched at most its first {limit} distinct words"
    )


def weights_for_runs(
    weights: Mapping[str, float], runs: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, float], str | None]:
    """The weights to fuse ``runs`` with, and a warning when they are not the planned ``weights``: when only
    retrievers weighted 0 found anything (the others failed or found nothing), every run weighs 1, so that the
    answer keeps their order instead of tying every result, and the warning says whose order it is."""
    used = {name: weight for name, weight in weights.items() if name in runs}
    if any(used.get(name, 1.0) > 0 and run for name, run in runs.items()):
        return used, None
    zero = [name for name, run in runs.items() if run]
    if not zero:
        return dict.fromkeys(runs, 1.0), None
    weighted = ", ".join(name for name, weight in weights.items() if weight > 0)
    it = "it" if len(zero) == 1 else "them"
    return dict.fromkeys(runs, 1.0), (
        f"{weighted} gave no results, so these are ranked by {', '.join(zero)} alone, though the weights give {it} 0"
    )
