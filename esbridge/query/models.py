"""The search request and response, shared by the CLI, the Python API and the HTTP service."""

from __future__ import annotations

import numbers
import operator
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from esbridge.ingest.json_lines import surrogate_location
from esbridge.query.grouping import RegistryGroups
from esbridge.query.types import FusionDecision
from esbridge.text import is_blank

SearchMode = Literal["hybrid", "lexical-only", "semantic-only", "native-hybrid"]

# Keyword fields a term filter may name; anything else is refused rather than silently ignored.
FILTERABLE_FIELDS = frozenset(
    {"tags", "entity_type", "category", "status", "doc_id", "chunk_id", "path", "source", "links"}
)
LIFECYCLE_STATUSES = ("deprecated", "draft", "disabled")


def status_spellings(status: str) -> list[str]:
    """The casings a status is matched in (``Deprecated``, ``DEPRECATED``, ...): notes and records write
    statuses as they like, and the keyword field stores them as written."""
    return list(dict.fromkeys((status, status.lower(), status.upper(), status.capitalize(), status.title())))


def _as_utc(moment: datetime) -> datetime:
    """A time without an offset as the engines read it in a range: UTC."""
    return moment.replace(tzinfo=timezone.utc) if moment.utcoffset() is None else moment


def _refuse_lone_surrogates(data: Any) -> Any:
    """``data`` unless a string in it holds a lone surrogate, which no engine takes and JSON cannot carry: bytes that
    are not UTF-8 in a command line, or an unpaired ``\\uXXXX`` escape in a JSON body."""
    where = surrogate_location(data) if isinstance(data, dict) else None
    if where is not None:
        raise ValueError(f"{where!r} is not valid text (it holds a lone UTF-16 surrogate: not UTF-8)")
    return data


def _moment(value: Any) -> Any:
    """A time as JSON gives one, a string, or a ``datetime``: not a number, which pydantic would read as seconds since
    1970 where the schema promises a date-time string."""
    if isinstance(value, (int, float)):
        raise ValueError("Input should be a date-time string such as 2024-05-01 or 2024-05-01T10:00:00Z")
    return value


Moment = Annotated[datetime | None, BeforeValidator(_moment)]


def _integral(value: Any) -> Any:
    """A count given from Python as any integral number (numpy's ``int64``, a type with ``__index__``), as the int it
    stands for. Anything else is left for ``StrictInt`` to judge: a bool, numpy's ``bool_`` and every value JSON
    carries (``true``, ``"3"``, ``2.0``), so HTTP and MCP bodies, which hold no other objects, stay as strict."""
    if isinstance(value, (bool, int)):
        return value
    try:
        if isinstance(value, numbers.Integral):
            return int(value)
        return int(operator.index(value)) if hasattr(type(value), "__index__") else value
    except (TypeError, ValueError, OverflowError):
        return value


Count = Annotated[StrictInt, BeforeValidator(_integral)]


class _NullIsNoFilters:
    """In the JSON schema, ``filters`` may also be null, which the validator reads as no filters."""

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [handler(schema), {"type": "null"}]}


class Filters(BaseModel):
    """Filters every retriever applies inside its search (kNN pre-filters, not post-filters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    terms: dict[str, list[str]] = Field(
        default_factory=dict, description="keyword field -> accepted values (any of them matches)"
    )
    modified_after: Moment = None
    modified_before: Moment = None
    created_after: Moment = None
    created_before: Moment = None
    include_deprecated: StrictBool = False
    include_draft: StrictBool = False
    include_disabled: StrictBool = False

    @model_validator(mode="before")
    @classmethod
    def _text_only(cls, data: Any) -> Any:
        return _refuse_lone_surrogates(data)

    @field_validator("terms")
    @classmethod
    def _known_fields(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        unknown = sorted(set(value) - FILTERABLE_FIELDS)
        if unknown:
            raise ValueError(f"cannot filter on {unknown}; filterable fields: {sorted(FILTERABLE_FIELDS)}")
        empty = sorted(name for name, values in value.items() if not values)
        if empty:
            raise ValueError(f"filter on {empty} has no values")
        return value

    @model_validator(mode="after")
    def _ranges_not_inverted(self) -> Filters:
        for name, after, before in (
            ("modified", self.modified_after, self.modified_before),
            ("created", self.created_after, self.created_before),
        ):
            if after is not None and before is not None and _as_utc(after) > _as_utc(before):
                raise ValueError(
                    f"{name}_after ({after.isoformat()}) is later than {name}_before ({before.isoformat()})"
                )
        return self

    @property
    def excluded_statuses(self) -> list[str]:
        """Lifecycle states left out, in lower case: those not switched on (``include_deprecated``, ...) and
        not asked for by a ``status`` term filter. Documents without a status count as active."""
        asked = {value.lower() for value in self.terms.get("status", [])}
        switched_on = {
            "deprecated": self.include_deprecated,
            "draft": self.include_draft,
            "disabled": self.include_disabled,
        }
        return [status for status in LIFECYCLE_STATUSES if not switched_on[status] and status not in asked]


def _no_filters(value: Any) -> Any:
    return Filters() if value is None else value


class SearchRequest(BaseModel):
    """One search. Fields left as None take the configured pipeline's value. Numbers and switches are strict: JSON's
    ``true``, ``"3"`` or ``2.0`` for ``top_n`` is refused rather than read as 1, 3 or 2. From Python, ``top_n`` may be
    any integral number but a bool (``numpy.int64(5)``), kept as a plain int."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=4096)
    top_n: Count = Field(default=10, ge=1)
    fusion: str | None = Field(
        default=None, description="fusion method name: qpp (the default), rrf, linear, dbsf, adaptive, or a plugin's"
    )
    weights: dict[str, StrictFloat] | None = Field(default=None, description="retriever -> weight, e.g. bm25, knn")
    filters: Annotated[Filters, BeforeValidator(_no_filters), _NullIsNoFilters] = Field(
        default_factory=Filters, description="null: no filters"
    )
    explain: StrictBool = False
    collapse: StrictBool | None = Field(default=None, description="keep only the best chunk of each document")
    graph: StrictBool | None = Field(default=None, description="add linked documents of the top results")
    recency: StrictBool | None = Field(default=None, description="multiply scores by recency")
    rerank: StrictBool | None = Field(default=None, description="re-rank the top candidates with the cross-encoder")
    mode: Literal["auto", "native", "client"] | None = None
    group: StrictBool = Field(
        default=False,
        description="also answer grouped as a registry shows it: servers (with matching_tools), virtual_servers, "
        "agents, skills, tools",
    )
    category: str | None = Field(
        default=None,
        description="search only this category (one of [routing]); without it, a query naming a category's "
        "keywords is routed to that category",
    )

    @model_validator(mode="before")
    @classmethod
    def _text_only(cls, data: Any) -> Any:
        return _refuse_lone_surrogates(data)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("query must not be blank")
        return value


class RetrieverExplain(BaseModel):
    rank: int
    score: float
    fields: list[str] = Field(default_factory=list, description="the index's fields the retriever searched (^boost)")


class ScoreScale(BaseModel):
    """How the last stage mapped the results' scores onto [0, 1]."""

    low: float = Field(description="the score shown as 0: 0 when the best score is positive, else the worst score")
    high: float = Field(description="the score shown as 1: the best score")


class ScoreRange(BaseModel):
    low: float = Field(description="the lowest score")
    high: float = Field(description="the highest score")


class RerankExplain(BaseModel):
    """How re-ranking placed a result: ``unnormalized_score`` is ``base + combined``."""

    reranker_score: float = Field(description="the re-ranker's own score of the query and the result's text")
    reranker_range: ScoreRange = Field(description="the lowest and highest reranker_score of the re-ranked results")
    score_before: float = Field(
        description="the score the result had when re-ranking began, which ordered the candidates: fused_score x "
        "recency_multiplier + link_lift - link_shift, or graph_score for a graph neighbour"
    )
    before_range: ScoreRange = Field(description="the lowest and highest score_before of the re-ranked results")
    weight: float = Field(description="the re-ranker's share of combined (pipeline.rerank.weight)")
    combined: float = Field(
        description="weight x reranker_score + (1 - weight) x score_before, each min-max normalized by its range "
        "(1 when its low equals its high)"
    )
    base: float = Field(
        description="1 above the best score of the results that were not re-ranked (1 when every one was), so "
        "that re-ranked results stay above them"
    )


class Explain(BaseModel):
    """Why a result is where it is."""

    retrievers: dict[str, RetrieverExplain] = Field(default_factory=dict)
    contributions: dict[str, float] = Field(default_factory=dict, description="fusion contribution per retriever")
    fused_score: float = 0.0
    neighbour_of: list[str] = Field(default_factory=list, description="results this one is linked with")
    hops: int | None = None
    graph_score: float | None = Field(
        default=None,
        description="graph expansion: the neighbour's score as it joined the list (its seeds' shares, placed below "
        "them), before re-ranking and normalisation",
    )
    link_strength: float | None = Field(
        default=None,
        description="graph expansion: how strongly the neighbour is tied to its most strongly tied seed, in (0, 1]",
    )
    recency_multiplier: float = Field(
        default=1.0,
        description="what recency multiplied the fused score by: 1.0 when it multiplied nothing (recency off, no date, "
        "or a fused score of 0, which no multiplier changes)",
    )
    link_lift: float | None = Field(
        default=None, description="graph re-scoring: what links to other results added to the fused score"
    )
    link_shift: float | None = Field(
        default=None,
        description="graph lifting: what was taken off this result (every score below the kept ones is scaled "
        "down by one factor) so that no lifted result passes the kept ones",
    )
    rerank_score: float | None = Field(
        default=None, description="the re-ranker's own score of the result (as reranking.reranker_score)"
    )
    reranking: RerankExplain | None = Field(
        default=None, description="re-ranking: the score before it, the re-ranker's, and how the two were combined"
    )
    engine_explanation: dict[str, Any] | None = Field(
        default=None, description="native hybrid: the engine's own explanation of its fused score, where it gives one"
    )
    unnormalized_score: float | None = Field(
        default=None,
        description="the score the results were ranked by, before normalisation: fused_score x recency_multiplier "
        "+ link_lift - link_shift; graph_score for a graph neighbour; reranking.base + reranking.combined for a "
        "re-ranked result",
    )
    normalization: ScoreScale | None = Field(
        default=None,
        description="final_score is (unnormalized_score - low) / (high - low), at least 0, or 1.0 when low == high "
        "(every result scored the same)",
    )
    final_score: float = 0.0


class SearchHit(BaseModel):
    id: str
    doc_id: str
    score: float
    title: str | None = None
    path: str | None = None
    entity_type: str | None = None
    explain: Explain | None = None


class NativeDetails(BaseModel):
    """Whether the engine fused this search itself (native hybrid), and what it was asked, or why not."""

    used: bool = False
    reason: str | None = Field(default=None, description="why the engine did not fuse")
    engine: str | None = None
    method: str | None = Field(default=None, description="the engine's fusion method: rrf or linear")
    weights: list[float] = Field(default_factory=list)
    search_pipeline: dict[str, Any] | None = Field(
        default=None, description="OpenSearch: the search pipeline sent with the request"
    )
    rank_constant: int | None = Field(default=None, description="Elasticsearch rrf: its rank constant")
    normalizer: str | None = Field(default=None, description="Elasticsearch linear: its score normalizer")


class RoutingDetails(BaseModel):
    """The category a search was limited to (None: all), and why."""

    category: str | None = None
    reason: str
    keywords: list[str] = Field(default_factory=list, description="the category's keywords the query holds")


class SearchDetails(BaseModel):
    """How the answer was made: fusion, timings, the native plan, the cache."""

    fusion: str = Field(default="", description="the fusion method name")
    top_k: int = Field(default=0, description="candidates each retriever was asked for")
    timings_ms: dict[str, float] = Field(
        default_factory=dict,
        description="milliseconds per step of the whole search: embed, bm25, knn, msearch, native, graph, rerank, "
        "grouping; "
        "a step of every retrieval round (rounds) counts the sum of them",
    )
    rounds: int = Field(
        default=1,
        description="retrieval rounds run: 1, or more when collapse asked the retrievers again, deeper, for top_n "
        "documents (top_k is the depth of the answer kept)",
    )
    fusion_decision: FusionDecision | None = Field(
        default=None, description="what a query-dependent fusion method (adaptive, qpp) decided"
    )
    native: NativeDetails | None = Field(default=None, description="native hybrid: used, or why not")
    concept_terms: list[str] = Field(default_factory=list, description="concept expansion: the terms added")
    routing: RoutingDetails | None = Field(default=None, description="category routing, when categories exist")
    cached: bool = Field(default=False, description="answered from the response cache")
    off: dict[str, str] = Field(
        default_factory=dict,
        description="features off because the index's field map names no field for them (knn, recency, graph, "
        "lifecycle) -> why",
    )


class SearchResponse(BaseModel):
    query: str
    search_mode: SearchMode
    took_ms: float
    warnings: list[str] = Field(default_factory=list)
    partial: bool = Field(
        default=False,
        description="some shards did not answer, or the engine's time limit cut a search short: documents on "
        "them may be missing (warnings says which search and why)",
    )
    results: list[SearchHit] = Field(default_factory=list)
    groups: RegistryGroups | None = Field(default=None, description="the results grouped by entity (request.group)")
    details: SearchDetails = Field(default_factory=SearchDetails)
