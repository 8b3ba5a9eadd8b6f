"""The engine-neutral field schema of an esbridge index, and its rendering per engine dialect.

One list of fields is the truth; ``render_index`` turns it into the create-index body of OpenSearch
or Elasticsearch. The JSON files in the repository's ``mappings/`` folder are this rendering with
default parameters, checked by a test, so reviewers can read the mapping without running code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from esbridge.config.mapping import DEFAULT_BM25_B, DEFAULT_BM25_K1
from esbridge.engines.analysis import ENGLISH, analysis
from esbridge.engines.base import JSON, Dialect
from esbridge.engines.dialect import vector_dimension, vector_field
from esbridge.engines.vector_options import VectorEncoding, apply_encoding

FieldKind = Literal["text", "keyword", "integer", "date", "object", "vector"]
Analysis = Literal["auto", "full", "core"]

VECTOR_FIELD = "vector"


def mapped_vector_dimension(mapping: Mapping[str, Any]) -> int | None:
    """The dimension of an index's ``VECTOR_FIELD`` as its live mapping gives it; None when it maps none."""
    properties = mapping.get("properties") or {}
    return vector_dimension(properties.get(VECTOR_FIELD) or {})


@dataclass(frozen=True)
class IndexParameters:
    """What an operator may tune in the mapping; anything else is fixed by the schema."""

    dimension: int = 384
    hnsw_m: int = 16
    hnsw_ef_construction: int = 100
    bm25_k1: float = DEFAULT_BM25_K1
    bm25_b: float = DEFAULT_BM25_B
    shards: int = 1
    replicas: int = 0
    vector_encoding: VectorEncoding = "float"
    """how the vectors are stored and searched (esbridge.engines.vector_options); a change needs a reindex"""
    engine_version: str = ""
    """the engine's version where a mapping depends on it (quantization parameters); set by IndexManager"""
    analysis: Analysis = "auto"
    """``core`` uses only analyzers built into every server build (for builds without the analysis-common
    module); ``auto`` lets IndexManager choose from the engine's probe, and renders as ``full`` elsewhere."""

    def __post_init__(self) -> None:
        if not 1 <= self.dimension <= 4096:
            raise ValueError(f"vector dimension must be in 1..4096, got {self.dimension}")
        if not 2 <= self.hnsw_m <= 100:
            raise ValueError(f"hnsw m must be in 2..100, got {self.hnsw_m}")
        if not 10 <= self.hnsw_ef_construction <= 4096:
            raise ValueError(f"hnsw ef_construction must be in 10..4096, got {self.hnsw_ef_construction}")
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={self.bm25_k1}, b={self.bm25_b}")


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: FieldKind
    analyzer: str | None = None
    subfields: dict[str, JSON] = field(default_factory=dict)
    doc: str = ""


# Text fields are analysed for English (stemming, stop words); a `.std` subfield keeps the exact
# words for queries where stemming hurts (names, identifiers).
_STD = {"std": {"type": "text", "analyzer": "standard"}}

FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("doc_id", "keyword", doc="id of the source document (note path, record id)"),
    FieldSpec("chunk_id", "keyword", doc="unique id of this chunk, also the engine _id"),
    FieldSpec("chunk_index", "integer", doc="position of the chunk in its document, from 0"),
    FieldSpec("source", "keyword", doc="the ingest source (vault, file) the chunk came from"),
    FieldSpec("title", "text", ENGLISH, {**_STD, "raw": {"type": "keyword", "ignore_above": 512}}),
    FieldSpec("body", "text", ENGLISH, _STD),
    FieldSpec("headings", "text", ENGLISH, _STD, doc="heading path of the chunk"),
    FieldSpec("code", "text", "esbridge_code", doc="code blocks; identifiers found by their parts and whole"),
    FieldSpec("path", "keyword", subfields={"text": {"type": "text", "analyzer": "esbridge_path"}}),
    FieldSpec("tags", "keyword"),
    FieldSpec("aliases", "text", ENGLISH, {**_STD, "raw": {"type": "keyword", "ignore_above": 512}}),
    FieldSpec("entity_type", "keyword"),
    FieldSpec("status", "keyword"),
    FieldSpec("category", "keyword"),
    FieldSpec("links", "keyword", doc="doc ids of link targets"),
    FieldSpec("link_weights", "object", doc="{doc id: weight} of links that do not weigh 1; stored, not indexed"),
    FieldSpec("created_at", "date"),
    FieldSpec("modified_at", "date"),
    FieldSpec("metadata", "object", doc="source metadata, stored but not indexed"),
    FieldSpec("metadata_text", "text", ENGLISH, doc="metadata keys and values, flattened, searchable"),
    FieldSpec("content_hash", "keyword", doc="hash of everything indexed, for incremental sync"),
    FieldSpec("embedding", "keyword", doc="'ok', 'missing' (awaits its vector), 'none' (no text to embed)"),
    FieldSpec(VECTOR_FIELD, "vector"),
)

TEXT_FIELDS = tuple(spec.name for spec in FIELDS if spec.kind == "text")


# With core analysis, the custom and language analyzers fall back to analyzers every build has.
_CORE_ANALYZERS = {ENGLISH: "standard", "esbridge_code": "standard", "esbridge_path": "simple"}


def _analyzer(name: str, params: IndexParameters) -> str:
    return _CORE_ANALYZERS.get(name, name) if params.analysis == "core" else name


def _render_field(spec: FieldSpec, dialect: Dialect, params: IndexParameters) -> JSON:
    if spec.kind == "vector":
        field = vector_field(dialect, params.dimension, m=params.hnsw_m, ef_construction=params.hnsw_ef_construction)
        return apply_encoding(dialect, field, params.vector_encoding, params.engine_version)
    if spec.kind == "object":
        return {"type": "object", "enabled": False}
    rendered: JSON = {"type": spec.kind}
    if spec.kind == "text" and spec.analyzer:
        rendered["analyzer"] = _analyzer(spec.analyzer, params)
    if spec.subfields:
        rendered["fields"] = {name: _render_subfield(sub, params) for name, sub in spec.subfields.items()}
    return rendered


def _render_subfield(sub: JSON, params: IndexParameters) -> JSON:
    if sub.get("type") != "text":
        return dict(sub)
    return {**sub, "analyzer": _analyzer(str(sub["analyzer"]), params)}


def render_mappings(dialect: Dialect, params: IndexParameters) -> JSON:
    return {
        "dynamic": "strict",
        "_meta": {SCHEMA_META_KEY: SCHEMA_VERSION},
        "properties": {spec.name: _render_field(spec, dialect, params) for spec in FIELDS},
    }


def render_settings(dialect: Dialect, params: IndexParameters) -> JSON:
    index: JSON = {
        "number_of_shards": params.shards,
        "number_of_replicas": params.replicas,
        # The index-wide default, not a per-field similarity: combined_fields (BM25F) refuses per-field ones.
        "similarity": {"default": {"type": "BM25", "k1": params.bm25_k1, "b": params.bm25_b}},
    }
    if params.analysis != "core":
        index["analysis"] = analysis()
    if dialect == "opensearch":
        index["knn"] = True
    return {"index": index}


def render_index(dialect: Dialect, params: IndexParameters | None = None) -> JSON:
    """The full create-index body (settings and mappings) for ``dialect``."""
    params = params or IndexParameters()
    return {"settings": render_settings(dialect, params), "mappings": render_mappings(dialect, params)}


SCHEMA_VERSION = 1
SCHEMA_META_KEY = "esbridge_schema"
"""The ``_meta`` key that marks an index esbridge created, holding ``SCHEMA_VERSION``."""


def field_doc() -> list[tuple[str, str, Any]]:
    """(name, kind, description) of every field, for ``esbridge mapping show --fields``."""
    return [(spec.name, spec.kind, spec.doc) for spec in FIELDS]
