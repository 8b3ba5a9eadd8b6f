"""The field map: which fields of an index esbridge searches, filters, dates and links by.

esbridge's own schema is the default map (``DEFAULT_FIELD_MAP``). An index esbridge did not create is
*attached* by a ``[fields.<index>]`` table in the settings naming its fields (``esbridge index inspect
NAME --write`` proposes one from the index's mapping); an attached index is read-only unless a command is
told otherwise with ``--write-attached``.

Every other part of the search pipeline speaks esbridge's own field names (``doc_id``, ``modified_at``,
``entity_type``, ...): requests are built from the map, and stored fields are read back under esbridge's
names (``canonical_source``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

WRITE_ATTACHED_FLAG = "--write-attached"

Feature = Literal["knn", "recency", "graph", "lifecycle", "filters"]

QueryEmbedding = Literal["client", "engine"]

# Filter names a request may use (esbridge's names) -> the field-map attribute holding the index's field.
FILTER_ROLES: Mapping[str, str] = {
    "doc_id": "id",
    "chunk_id": "chunk",
    "path": "path",
    "source": "source",
    "tags": "tags",
    "entity_type": "type",
    "category": "category",
    "status": "status",
    "links": "links",
    "modified_at": "date",
    "created_at": "created",
}

# esbridge's name of a stored field -> the field-map attribute that names it in the index.
_CANONICAL = {name: role for name, role in FILTER_ROLES.items() if role not in ("source",)} | {"title": "title"}


class FieldMap(BaseModel):
    """The fields of one index, by the role they play in a search."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: dict[str, float] = Field(description="text fields BM25 scores together, with their boosts")
    exact: dict[str, float] = Field(
        default_factory=dict, description="text fields with their own analyzers, scored separately (best field wins)"
    )
    content: list[str] = Field(
        default_factory=list, description="stored text that re-ranking and text-reading fusion methods read"
    )
    vector: str | None = Field(default=None, description="the dense vector field; none turns kNN off")
    dimension: int | None = Field(default=None, ge=1, le=4096, description="the vector field's dimension")
    space: str | None = Field(default=None, description="the vector field's similarity (as the mapping says)")
    vector_engine: str | None = Field(default=None, description="OpenSearch: the k-NN engine (lucene, faiss)")
    id: str | None = Field(default=None, description="keyword field with the document id; none: the engine's _id")
    chunk: str | None = Field(default=None, description="keyword field with a chunk id (esbridge's own schema)")
    title: str | None = None
    path: str | None = None
    source: str | None = None
    date: str | None = Field(default=None, description="date field recency and modified_* filters read")
    date_format: str | None = Field(
        default=None,
        description="the date field's mapping format, when it has one (epoch_second, date_optional_time||...): "
        "recency reads its stored values in it",
    )
    created: str | None = Field(default=None, description="date field created_* filters read")
    type: str | None = Field(default=None, description="keyword field with the document type")
    status: str | None = Field(default=None, description="keyword field with the lifecycle status")
    category: str | None = None
    tags: str | None = None
    links: str | None = Field(default=None, description="keyword field with the ids of linked documents")
    parent: str | None = Field(
        default=None,
        description="keyword field with the id of the server or agent a tool or skill belongs to (grouped answers; "
        "none: metadata.server_id and metadata.agent_id, as esbridge writes them)",
    )
    model: str | None = Field(
        default=None, description="the embedding model the index's vectors were made with (else [embedding] model)"
    )
    query_embedding: QueryEmbedding = Field(
        default="client", description="client: esbridge embeds the query; engine: the engine does (model_id)"
    )
    model_id: str | None = Field(
        default=None,
        description="engine-side embedding: the OpenSearch ML model id, or the Elasticsearch inference endpoint id",
    )
    semantic_text: bool = Field(
        default=False, description="Elasticsearch: the vector field is a semantic_text field (it names its endpoint)"
    )

    @field_validator("text", "exact")
    @classmethod
    def _boosts(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(name for name, boost in value.items() if not boost > 0)
        if bad:
            raise ValueError(f"boosts must be above 0; not so for {', '.join(bad)}")
        blank = [name for name in value if not name.strip()]
        if blank:
            raise ValueError("a field name is blank")
        return value

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | None) -> str | None:
        # It replaces [embedding] model for this index; blank, it would name the working directory as a folder.
        if value is not None and not value.strip():
            raise ValueError("is blank: name the model that made the index's vectors, or leave it out")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> FieldMap:
        if not self.text:
            raise ValueError("text names no field: BM25 needs at least one text field (field = boost)")
        both = sorted(set(self.text) & set(self.exact))
        if both:
            raise ValueError(f"{', '.join(both)} is in both text and exact; name each field once")
        if self.vector is None and (self.dimension is not None or self.space is not None):
            raise ValueError("dimension and space describe the vector field, but no vector field is named")
        if self.semantic_text and self.query_embedding != "engine":
            raise ValueError(
                "a semantic_text field is searched with the engine's embedding: query_embedding = 'engine'"
            )
        if self.query_embedding == "engine" and not (self.model_id or self.semantic_text):
            raise ValueError("query_embedding = 'engine' needs model_id (the engine's model or inference endpoint)")
        if self.query_embedding == "engine" and self.vector is None:
            raise ValueError("query_embedding = 'engine' needs the vector field it searches (vector)")
        return self

    def field_for(self, name: str) -> str | None:
        """The index's field for esbridge's field ``name`` (a filter's or a stored field's name), if mapped."""
        role = FILTER_ROLES.get(name) or _CANONICAL.get(name)
        return getattr(self, role) if role else None

    def stored_fields(self, *, with_texts: bool) -> list[str]:
        """The stored fields a search asks for: those the later stages read, and the texts when they are read."""
        roles = ("id", "chunk", "title", "path", "links", "date", "type", "status", "tags")
        named = [field for role in roles if (field := getattr(self, role))]
        # A multi-field (tags.keyword) is not in _source: its parent holds the value (read_path).
        parents = [field.rsplit(".", 1)[0] for field in named if "." in field]
        return list(dict.fromkeys([*named, *parents, *(self.content if with_texts else [])]))

    def off(self) -> dict[Feature, str]:
        """Features this map turns off, each with the reason."""
        reasons: dict[Feature, str] = {}
        if self.vector is None:
            reasons["knn"] = "no vector field is mapped"
        if self.date is None:
            reasons["recency"] = "no date field is mapped"
        if self.links is None:
            reasons["graph"] = "no links field is mapped"
        if self.status is None:
            reasons["lifecycle"] = "no status field is mapped: deprecated, draft and disabled are not left out"
        return reasons


DEFAULT_FIELD_MAP = FieldMap(
    # Title 1.5, not the 3.0 it was: every chunk repeats its document's title, and on SciFact's train queries
    # BM25 nDCG@10 was 0.638 at 3.0, 0.675 at 2.0, 0.688 at 1.5, 0.678 at 1.0 (docs/evaluation-scifact.md).
    text={"title": 1.5, "aliases": 2.5, "headings": 2.0, "body": 1.0, "metadata_text": 1.0},
    exact={"path.text": 2.0, "code": 1.0},
    content=["body", "code"],
    vector="vector",
    id="doc_id",
    chunk="chunk_id",
    title="title",
    path="path",
    source="source",
    date="modified_at",
    created="created_at",
    type="entity_type",
    status="status",
    category="category",
    tags="tags",
    links="links",
)
"""esbridge's own schema (``esbridge.mappings.schema``)."""


def read_path(source: Mapping[str, Any], field: str) -> Any:
    """The value of ``field`` in a stored document, following dots into objects (``meta.updated``).

    A multi-field (``tags.keyword``) has no value of its own in ``_source``: it indexes its parent's, so a
    path that ends below a value that is no object reads that value.
    """
    if field in source:
        return source[field]
    value: Any = source
    for part in field.split("."):
        if not isinstance(value, Mapping):
            return value if value is not source and _leaf(value) else None
        if part not in value:
            return None
        value = value[part]
    return value


def _leaf(value: Any) -> bool:
    """A field's value rather than an object: a scalar, or a list of scalars."""
    items = value if isinstance(value, list) else [value]
    return all(not isinstance(item, (Mapping, list)) for item in items)


def canonical_source(source: Mapping[str, Any], fields: FieldMap, hit_id: str) -> Mapping[str, Any]:
    """A hit's stored fields under esbridge's names, so every later stage reads an attached index alike.

    With the default map this is ``source`` itself. Otherwise the mapped fields are copied to esbridge's
    names (the originals stay), the document id is the ``id`` field or else the engine's ``_id`` (whole: an
    attached index's ids are not esbridge's ``doc#n`` chunk ids, so ``repo#12`` is not a chunk of ``repo``),
    and ``body`` holds the content fields joined, for re-ranking.
    """
    if fields is DEFAULT_FIELD_MAP:
        return source
    out: dict[str, Any] = dict(source)
    for name, role in _CANONICAL.items():
        mapped = getattr(fields, role)
        if mapped is not None and mapped != name:
            out[name] = read_path(source, mapped)
    if fields.id is None or out.get("doc_id") in (None, ""):
        out["doc_id"] = hit_id
    if "body" not in fields.content and fields.content:
        texts = [read_path(source, name) for name in fields.content]
        out["body"] = "\n".join(str(text) for text in texts if text)
    return out
