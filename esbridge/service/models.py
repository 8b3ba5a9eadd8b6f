"""The service's own request and response bodies; searches use ``esbridge.query.models`` unchanged."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from esbridge.ids import shown_escaped

DOCUMENT_EXAMPLE: dict[str, JsonValue] = {
    "id": "github-mcp",
    "title": "GitHub MCP server",
    "text": "Lets agents open issues and pull requests.",
    "tags": ["github"],
    "links": ["git-mcp"],
    "modified_at": "2024-05-01T10:00:00Z",
}


class DocumentsRequest(BaseModel):
    """A batch of records to upsert, each shaped like one line of a JSONL source (docs/ingest-markdown.md), or of a
    registry source with ``"format": "registry"`` (docs/registries.md)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"documents": [DOCUMENT_EXAMPLE]}]})

    documents: list[dict[str, Any]] = Field(
        min_length=1,
        description=(
            "records with a required id and optional title, name, text, description, links (ids, or {id, weight} "
            "objects), link_weights, tags, aliases, "
            "created_at, modified_at, entity_type, status, category, metadata, tools; each is validated "
            "on its own, so one bad record does not fail the batch"
        ),
    )
    format: Literal["jsonl", "registry"] = Field(
        default="jsonl",
        description=(
            "how the records are read, as esbridge ingest --format reads a file: jsonl (lines of a JSONL source), "
            "or registry (MCP servers and A2A agents, each tool and skill its own document linked to its record; "
            "docs/registries.md)"
        ),
    )


class DocumentResult(BaseModel):
    position: int = Field(description="the record's position in the request, from 0")
    id: str | None = Field(description="the record's id, when it could be read")
    status: Literal["ok", "error"]
    chunks: int = Field(default=0, description="chunks written for the document")
    error: str | None = None
    warnings: list[str] = Field(
        default_factory=list,
        description="what in the record was read otherwise than given or left out (a link weighed twice, no text)",
    )


class DocumentsResponse(BaseModel):
    index: str
    written: int = Field(description="documents written")
    failed: int = Field(description="documents refused or not written")
    results: list[DocumentResult]
    warnings: list[str] = Field(default_factory=list)
    visible: bool = Field(
        default=True, description="searches already see the write (false with service.refresh = false)"
    )


class DeleteResponse(BaseModel):
    id: str = Field(
        description="the deleted document's id; a control or bidirectional formatting character in it is shown "
        "escaped (\\u202e)"
    )
    deleted_chunks: int = Field(description="the chunks deleted, those of the documents in `owned` included")
    owned: list[str] = Field(
        default_factory=list,
        description="the tools and skills of a registry record deleted with it (their ids, shown as `id` is)",
    )

    @field_validator("id")
    @classmethod
    def _shown_id(cls, value: str) -> str:
        return shown_escaped(value)

    @field_validator("owned")
    @classmethod
    def _shown_owned(cls, value: list[str]) -> list[str]:
        return [shown_escaped(each) for each in value]


class KeysReloaded(BaseModel):
    keys: int = Field(description="API keys accepted after reading the keys file again")


class ErrorDetail(BaseModel):
    field: str
    message: str


class ErrorInfo(BaseModel):
    kind: str = Field(description="a stable name: validation, unauthorized, forbidden, engine_unavailable, ...")
    message: str
    fields: list[ErrorDetail] = Field(default_factory=list, description="for validation errors: what is wrong where")


class ErrorResponse(BaseModel):
    error: ErrorInfo


class Health(BaseModel):
    status: Literal["ok", "ready", "not ready"]
    checks: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] | None = Field(
        default=None,
        description="what answers lack while the service stays ready (shards of the index that do not answer)",
    )


class IndexStatus(BaseModel):
    """What the index behind the alias holds (the MCP tool ``index_status``, ``Backend.index_status``)."""

    index: str = Field(description="the alias (or index) the settings name")
    engine: str = Field(description="the engine's URL without credentials, or embedded")
    exists: bool
    indices: list[str] = Field(description="the indices behind the alias")
    chunks: int = Field(description="chunks the index holds (only the shards that answered, when partial)")
    partial: bool = Field(description="some shard did not answer: chunks counts only those that did")
    warnings: list[str] = Field(default_factory=list, description="what is missing from chunks; left out when none")
    model: str | None = Field(description="the query model in use (null: none loaded)")
    index_model: str | None = Field(description="the model the index records as having made its vectors (null: none)")
    model_problem: str | None = Field(default=None, description="why no model is loaded; left out when none")

    @model_serializer(mode="wrap")
    def _without_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``warnings`` and ``model_problem`` only when they say something, as the tool has always answered."""
        data: dict[str, Any] = handler(self)
        if not data.get("warnings"):
            data.pop("warnings", None)
        if data.get("model_problem") is None:
            data.pop("model_problem", None)
        return data
