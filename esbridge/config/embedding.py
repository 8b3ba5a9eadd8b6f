"""The ``[embedding]`` settings: which model embeds chunks and queries, on which backend, and its profile."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MODELS_DIR_ENV = "ESBRIDGE_MODELS_DIR"
"""Where esbridge's model folder is, when not ``~/.cache/esbridge/models``."""

HASH_CACHE_ENV = "ESBRIDGE_WEIGHT_HASHES"
"""The file the digests of model weights are kept in (default ``$XDG_CACHE_HOME/esbridge/weight-hashes.json``)."""

Backend = Literal["torch", "onnx"]
Precision = Literal["fp32", "int8"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingSettings(_Section):
    """The model that embeds chunks and queries.

    ``pooling``, ``normalize``, ``query_prompt``, ``passage_prompt`` and ``max_tokens`` default to the
    model's own profile (esbridge.embeddings.profiles); setting one replaces that field only.
    """

    provider: str = Field(
        default="sentence-transformers", description="a registered embedder (entry-point group esbridge.embedders)"
    )
    model: str = Field(
        default="BAAI/bge-small-en-v1.5",
        description="model name, or a path to a sentence-transformers model directory or an ONNX export",
    )
    backend: Backend = Field(default="onnx", description="onnx (ONNX Runtime) or torch (sentence-transformers)")
    precision: Precision = Field(
        default="int8", description="onnx backend: int8 (dynamically quantized) weights, or fp32 ones"
    )
    dimension: int | None = Field(default=None, ge=1, le=4096, description="defaults to the model's own")
    batch_size: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="texts per model call; none = the backend's own: torch 32, onnx 1 (on CPU one text a call is the "
        "fastest, and its int8 vector then depends on its own text only)",
    )
    device: str = "cpu"
    threads: int | None = Field(
        default=None, ge=1, le=512, description="CPU threads when embedding documents; none = one per core"
    )
    query_threads: int | None = Field(
        default=1,
        ge=1,
        le=512,
        description="CPU threads of query-serving processes (search, serve, mcp, bench); none = one per core",
    )
    query_processes: int = Field(
        default=1,
        ge=0,
        le=64,
        description="child processes that embed queries in long-running query servers (serve, mcp, bench); "
        "0 = in the server's own process",
    )
    cache_dir: Path | None = Field(
        default=None, description="embedding cache; defaults to ~/.cache/esbridge/embeddings"
    )
    pooling: Literal["mean", "cls"] | None = Field(default=None, description="defaults to the model profile's")
    normalize: bool | None = Field(default=None, description="unit-length vectors; defaults to the model profile's")
    query_prompt: str | None = Field(default=None, description="put before every query; defaults to the profile's")
    passage_prompt: str | None = Field(
        default=None, description="put before every indexed text; defaults to the profile's"
    )
    max_tokens: int | None = Field(default=None, ge=8, le=8192, description="defaults to the profile's")

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str) -> str:
        # A blank name is no hub id, and as a path it is the working directory, whose files would be loaded.
        if not value.strip():
            raise ValueError("is blank: name a hub model, a short alias or a model folder")
        return value
