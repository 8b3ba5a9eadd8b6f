"""Which model made an index's vectors, as the index records it, and whether another model may search them.

An index records the ``ModelIdentity`` of the model that embedded its chunks in its mapping's ``_meta``
(``esbridge_model``). Before a search, the query model's identity is compared with it (``compare``):

* **the same model** when the weights' SHA-256 are equal (whatever the names), or when the names are the
  same (a hub id and its short alias count as one name) and, on the same backend and precision, the
  weights do not differ. torch and ONNX files of one model never hash alike, so across backends the name
  decides: their fp32 vectors agree to cosine 0.99999 (docs/models.md).
* **compatible, with a note**: another backend or precision of the same model. int8 query vectors stay
  within cosine 0.9875 of fp32 ones, and searching an fp32 index with int8 queries ranks like fp32
  queries (docs/model-records.md, "Which model may search an index"), so this is allowed and only noted.
* **different**: another model or other weights under one name, another dimension, pooling,
  normalization, query prompt or passage prompt; the vectors live in another space, and a search is
  refused (``ModelMismatch``) unless the caller forces it.

The token limit is recorded but not compared: chunks are cut well below every known model's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from esbridge.embeddings.base import Embedder, model_profile
from esbridge.embeddings.profiles import canonical_name
from esbridge.errors import ConfigError, ModelMismatch

META_KEY = "esbridge_model"
"""The key of the identity in the index mapping's ``_meta``."""

PENDING_KEY = "esbridge_model_pending"
"""The key of the model an ingest is re-embedding the index with, in ``_meta`` until that run records it: while it
is there, the index may hold vectors of both models."""

SAME_MODEL_COSINE = 0.9
"""Stored vectors whose cosine with a model's vectors of the same texts is at least this were made by that
model: between backends and precisions of one model the lowest cosine measured was 0.9875, between two
models it is near 0 (``esbridge.ingest.vector_agreement`` reads it for indices that record no model)."""


class ModelIdentity(BaseModel):
    """What makes a model's vectors what they are, as written into an index's ``_meta``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    """the hub id, or the folder the model was loaded from"""
    weights: str | None = None
    """SHA-256 over the weight files loaded (``esbridge.embeddings.weights``); None when they were not found"""
    revision: str | None = None
    """the hub commit the files came from, when loaded from the hub's cache"""
    dimension: int
    pooling: str
    normalize: bool
    query_prompt: str = ""
    passage_prompt: str = ""
    backend: str = "unknown"
    """torch, onnx, or unknown (an embedder that does not say)"""
    precision: str = "fp32"
    max_tokens: int | None = None

    @property
    def model(self) -> str:
        """The name two identities are matched by: a known model's hub id, else the name as given."""
        return canonical_name(self.name) or self.name

    def describe(self) -> str:
        """One line naming the model and what shapes its vectors, for messages."""
        weights = f"weights sha256 {self.weights[:12]}" if self.weights else "weights not hashed"
        if self.revision:
            weights += f", revision {self.revision[:12]}"
        prompts = ", ".join(
            f"{kind} prompt {prompt!r}" if prompt else f"no {kind} prompt"
            for kind, prompt in (("query", self.query_prompt), ("passage", self.passage_prompt))
        )
        normalized = "normalized" if self.normalize else "not normalized"
        return (
            f"{self.name} ({self.backend} {self.precision}, {weights}, {self.dimension}-d, {self.pooling} pooling, "
            f"{normalized}, {prompts})"
        )

    def to_meta(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class Verdict:
    """How a query model relates to an index's model: ``differences`` refuse a search, ``notes`` do not."""

    differences: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def compatible(self) -> bool:
        return not self.differences


def compare(indexed: ModelIdentity, query: ModelIdentity) -> Verdict:
    """Whether ``query``'s vectors may search vectors made by ``indexed`` (see the module docstring)."""
    differences: list[str] = []
    notes: list[str] = []
    same_format = (indexed.backend, indexed.precision) == (query.backend, query.precision)
    same_weights = indexed.weights is not None and indexed.weights == query.weights
    if not same_weights:
        if indexed.model != query.model:
            differences.append(f"model {indexed.name} vs {query.name}")
        elif same_format and indexed.weights and query.weights:
            differences.append(f"weights sha256 {indexed.weights[:12]} vs {query.weights[:12]}")
        elif indexed.revision and query.revision and indexed.revision != query.revision:
            differences.append(f"revision {indexed.revision[:12]} vs {query.revision[:12]}")
    if indexed.dimension != query.dimension:
        differences.append(f"dimension {indexed.dimension} vs {query.dimension}")
    for label, mine, theirs in (
        ("pooling", indexed.pooling, query.pooling),
        ("normalization", indexed.normalize, query.normalize),
        ("query prompt", indexed.query_prompt, query.query_prompt),
        ("passage prompt", indexed.passage_prompt, query.passage_prompt),
    ):
        if mine != theirs:
            differences.append(f"{label} {mine!r} vs {theirs!r}")
    if indexed.backend != query.backend:
        notes.append(f"backend {indexed.backend} vs {query.backend}")
    if indexed.precision != query.precision:
        notes.append(f"precision {indexed.precision} vs {query.precision}")
    return Verdict(tuple(differences), tuple(notes))


def identity_of(model: Embedder) -> ModelIdentity:
    """The identity of the model ``model`` runs: its own ``model_identity`` when it has one (the torch and
    ONNX embedders, and wrappers that pass theirs on), else what the ``Embedder`` interface says."""
    known = getattr(model, "model_identity", None)
    if isinstance(known, ModelIdentity):
        return known
    profile = model_profile(model)
    return ModelIdentity(
        name=model.name,
        dimension=model.dimension,
        pooling=profile.pooling,
        normalize=profile.normalize,
        query_prompt=profile.query_prompt,
        passage_prompt=profile.passage_prompt,
        max_tokens=model.max_tokens,
    )


def recorded_identity(mapping: Mapping[str, Any], index: str) -> ModelIdentity | None:
    """The identity ``index``'s mapping records; None for an index that records none (made before esbridge
    recorded models, or not made by esbridge). A record that cannot be read is an error naming the index."""
    meta = mapping.get("_meta") or {}
    recorded = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    if recorded is None:
        return None
    return parse_identity(recorded, f"index {index} records its model in _meta.{META_KEY}, but the record")


def pending_identity(mapping: Mapping[str, Any], index: str) -> ModelIdentity | None:
    """The model an ingest began to re-embed ``index`` with and has not recorded yet (``PENDING_KEY``); None when
    no re-embedding is unfinished."""
    meta = mapping.get("_meta") or {}
    pending = meta.get(PENDING_KEY) if isinstance(meta, Mapping) else None
    if pending is None:
        return None
    what = f"index {index} names the model it is being re-embedded with in _meta.{PENDING_KEY}, but that record"
    return parse_identity(pending, what)


def unfinished_warning(index: str, pending: ModelIdentity) -> str:
    """What a search or an export of ``index`` says while a re-embedding with ``pending`` is unfinished."""
    return (
        f"index {index} was being re-embedded with {pending.name} by an ingest that did not finish: some of its "
        f"vectors may be {pending.name}'s, others the recorded model's; run `esbridge ingest` again to finish it"
    )


def parse_identity(value: Any, what: str) -> ModelIdentity:
    """``value`` read as an identity; a ``ConfigError`` saying ``what`` is malformed and why, when it is not one."""
    try:
        return ModelIdentity.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the record"
        raise ConfigError(
            f"{what} is malformed ({where}: {first['msg']}); fix or remove it, or rebuild the index"
        ) from exc


def with_identity(meta: Mapping[str, Any], identity: ModelIdentity) -> dict[str, Any]:
    """``meta`` (a mapping's ``_meta``) with ``identity`` recorded in it, everything else kept."""
    return {**meta, META_KEY: identity.to_meta()}


def mismatch_error(index: str, indexed: ModelIdentity, query: ModelIdentity, verdict: Verdict) -> ModelMismatch:
    """The refusal of a search of ``index`` (made by ``indexed``) with ``query``, naming both and the way out."""
    message = (
        f"index {index} holds vectors made by {indexed.describe()}, but this search would embed the query with "
        f"{query.describe()}; they differ in {'; '.join(verdict.differences)}. Search with the index's model "
        f"([embedding] model = {indexed.name!r}), re-embed the index with this one (`esbridge ingest` with it "
        "re-embeds every chunk), or search anyway with --allow-model-mismatch ([search] allow_model_mismatch = "
        "true), which answers with a warning"
    )
    return ModelMismatch(message, index=index, index_model=indexed.describe(), query_model=query.describe())


def mismatch_warning(index: str, indexed: ModelIdentity, query: ModelIdentity, verdict: Verdict) -> str:
    """What a forced search of ``index`` with another model says in its answer."""
    return (
        f"model mismatch (allowed by allow_model_mismatch): {index}'s vectors were made by {indexed.name}, the query "
        f"was embedded by {query.name} ({'; '.join(verdict.differences)}); kNN results compare vectors of two "
        "different spaces and may be meaningless"
    )


def unrecorded_mismatch(index: str, query: ModelIdentity, agreement: float) -> ModelMismatch:
    """The refusal of a search of ``index``, which records no model, whose stored vectors ``query`` did not make."""
    message = (
        f"index {index} records no embedding model, and its vectors were not made by {query.describe()}: stored "
        f"vectors have cosine {agreement:.2f} with its vectors of the same texts (the same model gives "
        f"{SAME_MODEL_COSINE} or more). Search with the model that made them ([embedding] model; esbridge's default "
        "was sentence-transformers/all-MiniLM-L6-v2 before BAAI/bge-small-en-v1.5), re-embed the index with this "
        "one (`esbridge ingest` with it re-embeds every chunk), or search anyway with --allow-model-mismatch"
    )
    return ModelMismatch(message, index=index, index_model="not recorded", query_model=query.describe())


def unrecorded_mismatch_warning(index: str, query: ModelIdentity, agreement: float) -> str:
    """What a forced search of such an index says in its answer."""
    return (
        f"model mismatch (allowed by allow_model_mismatch): {index} records no model and its vectors were not made "
        f"by {query.name} (cosine {agreement:.2f} on stored chunks); kNN results may be meaningless"
    )
