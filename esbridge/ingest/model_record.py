"""The model an index records in its ``_meta``, as ingest keeps it true: record, re-embed, or leave alone.

The record must never name a model whose vectors are not all written. So an ingest decides first
(``plan_model``) and records last (``record_model``, after its writes):

* the index records no model and holds no vectors yet (a new index): the run's model is recorded after
  its writes (a chunk whose write failed has no vector at all, so the record is still true), unless they
  wrote no vector (an empty source): an empty index records no model, so it holds no later run to one;
* it records a compatible model (the same one, or another backend or precision of it): nothing changes;
* it records another model of the same dimension: every chunk is re-embedded, the source's own
  chunks by the run's writes and every other chunk from the text the index holds
  (``stored_to_reembed``, ``reembed_stored``), and the new model is recorded only when all of that
  succeeded; a run that failed half-way leaves the old record, so running it again re-embeds again
  and converges. Before its first write it marks the index as being re-embedded (``mark_reembedding``),
  and recording the new model removes the mark: a later run with the old model, which the record still
  names, finds the mark and re-embeds every chunk too, since the chunks the stopped run wrote hold the
  other model's vectors under unchanged hashes;
* it records nothing but holds vectors (an index made before esbridge recorded models): the vectors
  say which model made them (``vector_agreement``). If the run's model gives the same vectors for
  a few stored chunks' texts, it is recorded after the writes; if not, every chunk is re-embedded as for
  a recorded other model. ``esbridge index record-model`` records the configured model by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from esbridge import errors
from esbridge.embeddings.base import Embedder, passage_vectors, seen_as_nothing
from esbridge.embeddings.identity import (
    PENDING_KEY,
    SAME_MODEL_COSINE,
    ModelIdentity,
    compare,
    identity_of,
    mismatch_error,
    pending_identity,
    recorded_identity,
    unrecorded_mismatch,
    with_identity,
)
from esbridge.engines.base import BulkAction, BulkItemFailure, Engine, Hit, rollover_template
from esbridge.engines.bulk import BulkWriter
from esbridge.engines.index_templates import is_data_stream
from esbridge.ingest.documents import EMBEDDED, EMBEDDING_SOURCE_FIELDS, NOTHING_TO_EMBED, chunk_from_source
from esbridge.ingest.report import IngestReport
from esbridge.ingest.vector_agreement import agreement
from esbridge.mappings.schema import VECTOR_FIELD

WITH_VECTOR = {"term": {"embedding": EMBEDDED}}


@dataclass(frozen=True)
class ModelPlan:
    """What an ingest does about the index's model record."""

    reembed: bool = False
    """the index's vectors were made by another model: write every chunk again, whatever its hash"""
    record: ModelIdentity | None = None
    """record this identity once every write succeeded"""
    warning: str | None = None


def plan_model(engine: Engine, index: str, mapping: Mapping[str, Any], embedder: Embedder | None) -> ModelPlan:
    """What to do about ``index``'s record for an ingest with ``embedder`` (see the module docstring)."""
    if embedder is None:
        return ModelPlan()
    current = identity_of(embedder)
    recorded = recorded_identity(mapping, index)
    pending = pending_identity(mapping, index)
    if pending is not None and not compare(pending, current).compatible:
        # The record does not say which chunks that run rewrote, and their hashes are unchanged.
        return ModelPlan(
            reembed=True,
            record=current,
            warning=f"index {index} was being re-embedded with {pending.name} by a run that did not finish, so some "
            f"of its vectors may be {pending.name}'s: every chunk is embedded again with {current.name}",
        )
    if recorded is None:
        vectors = engine.search(index, {"size": 0, "track_total_hits": True, "query": WITH_VECTOR}).total
        if vectors == 0:
            return ModelPlan(record=current)
        agreed = agreement(engine, index, embedder)
        if agreed is None or agreed >= SAME_MODEL_COSINE:
            return ModelPlan(record=current)
        return ModelPlan(
            reembed=True,
            record=current,
            warning=f"index {index} records no model, and its {vectors} vector(s) were not made by {current.name} "
            f"(stored vectors have cosine {agreed:.2f} with its vectors of the same texts): every chunk is "
            f"embedded again with {current.name}",
        )
    verdict = compare(recorded, current)
    if verdict.compatible:
        return ModelPlan()
    return ModelPlan(
        reembed=True,
        record=current,
        warning=f"index {index}'s vectors were made by {recorded.name}, not {current.name} "
        f"({'; '.join(verdict.differences)}): every chunk is embedded again with {current.name}",
    )


def refuse_other_model(engine: Engine, index: str, embedder: Embedder) -> None:
    """Refuse to add vectors of ``embedder`` to an index whose vectors another model made."""
    _refuse_other_than(recorded_identity(engine.get_mapping(index), index), index, embedder)


def model_to_record_first(engine: Engine, index: str, embedder: Embedder) -> ModelIdentity | None:
    """``refuse_other_model``, then the identity to record once a vector of ``embedder`` is written: when the index
    records none and holds no vector yet; else None (an index made before records holds vectors: written unchecked
    and left unrecorded, as ever). Only for esbridge's own indices, whose ``embedding`` field says what a chunk
    holds (an attached index may map its vectors under that name)."""
    recorded = recorded_identity(engine.get_mapping(index), index)
    _refuse_other_than(recorded, index, embedder)
    return None if recorded is not None or holds_vectors(engine, index) else identity_of(embedder)


def _refuse_other_than(recorded: ModelIdentity | None, index: str, embedder: Embedder) -> None:
    if recorded is None:
        return
    current = identity_of(embedder)
    verdict = compare(recorded, current)
    if not verdict.compatible:
        raise mismatch_error(index, recorded, current, verdict)


def model_to_record_with_missing(engine: Engine, index: str, embedder: Embedder) -> ModelIdentity | None:
    """For ``embed --missing``, before its writes: refuse to add ``embedder``'s vectors to an index whose vectors
    another model made (as its record says, or as its vectors do when it records none); else the identity to
    record once they are written, None when the index records it already."""
    current = identity_of(embedder)
    recorded = recorded_identity(engine.get_mapping(index), index)
    if recorded is not None:
        verdict = compare(recorded, current)
        if not verdict.compatible:
            raise mismatch_error(index, recorded, current, verdict)
        return None
    agreed = agreement(engine, index, embedder)
    if agreed is not None and agreed < SAME_MODEL_COSINE:
        raise unrecorded_mismatch(index, current, agreed)
    return current


def refuse_several_indices(engine: Engine, name: str, *, what: str) -> None:
    """Refuse ``what`` (``embed --missing``, an ingest, an import) into a name behind which there are several
    indices, or a data stream, before anything is written, naming each index and the way out.

    Their writes go by id (index, update, delete) into one index, which a data stream refuses (it takes new
    documents only) and an alias gives to its write index alone while searches read them all; and the model they
    record afterwards would be claimed for indices they never wrote nor checked. ``esbridge index record-model``
    records one model behind such a name, checking each index first (``record_by_hand``)."""
    try:
        behind = sorted(engine.get_mappings(name))
    except errors.IndexNotFound:
        return
    stream = is_data_stream(name, behind)
    if len(behind) < 2 and not stream:
        return
    listed = ", ".join(behind)
    record = (
        f"`esbridge index record-model --index {name}` records a model in every index behind {name}, checking each "
        "first"
    )
    if stream:
        raise errors.AmbiguousAlias(
            f"data stream {name!r} (backing indices {listed}) takes new documents only, so it refuses {what}'s writes "
            "by id; nothing was written. esbridge writes into its own indices behind an alias: give it a name of its "
            f"own (--index NAME). {record} (--in-template: in the stream's index template too)"
        )
    rollover = rollover_template(engine, name)
    templated = (
        f" (--in-template: in index template {rollover.template} too, which makes its next index)"
        if rollover is not None and rollover.template is not None
        else ""
    )
    raise errors.AmbiguousAlias(
        f"alias {name!r} points to several indices ({listed}): {what} would write into its write index alone while "
        "searches read them all, and record its model in indices it never wrote; nothing was written. Point the "
        f"alias at one index (POST _aliases) and run again, or give esbridge a name of its own (--index NAME). "
        f"{record}{templated}"
    )


def holds_vectors(engine: Engine, index: str) -> bool:
    return engine.search(index, {"size": 0, "track_total_hits": True, "query": WITH_VECTOR}).total > 0


def record_model(engine: Engine, index: str, identity: ModelIdentity) -> None:
    """Write ``identity`` into the ``_meta`` of the index behind ``index``, keeping the rest of ``_meta`` but the
    mark of a re-embedding (``mark_reembedding``), which is done now."""
    for concrete in engine.alias_targets(index) or [index]:
        meta = engine.get_mapping(concrete).get("_meta") or {}
        kept = {key: value for key, value in meta.items() if key != PENDING_KEY}
        engine.put_meta(concrete, with_identity(kept, identity))


def mark_reembedding(engine: Engine, index: str, identity: ModelIdentity) -> None:
    """Say in ``_meta``, before the first vector of ``identity`` is written, that the index is being re-embedded
    with it: a run that stops half-way leaves the old record, and a later run with the old model must then
    re-embed too, as the chunks already written hold the other model's vectors under unchanged hashes."""
    for concrete in engine.alias_targets(index) or [index]:
        meta = engine.get_mapping(concrete).get("_meta") or {}
        engine.put_meta(concrete, {**meta, PENDING_KEY: identity.to_meta()})


def stored_to_reembed(engine: Engine, index: str, *, skip: Collection[str] = ()) -> list[Hit]:
    """Every chunk of ``index`` that has a vector or had nothing to embed (another model may see something in its
    text), but those ``skip`` names, with the fields its text is made of; not those awaiting a vector."""
    embedded = {"terms": {"embedding": [EMBEDDED, NOTHING_TO_EMBED]}}
    hits = engine.scan(index, embedded, list(EMBEDDING_SOURCE_FIELDS), sort_field="chunk_id")
    return [hit for hit in hits if hit.id not in skip]


def reembed_stored(
    engine: Engine,
    index: str,
    embedder: Embedder,
    hits: Sequence[Hit],
    *,
    report: IngestReport | None = None,
    window: int = 512,
    on_window: Callable[[int], None] = lambda n: None,
) -> tuple[int, list[BulkItemFailure]]:
    """Embed ``hits`` (from ``stored_to_reembed``) again from the text the index holds; return how many got a vector
    and the failures. As ingest does, a chunk with nothing to embed (written with a vector before blank chunks were
    left without one, or one the model sees nothing in) loses its vector: the update sets it to null, which every
    engine takes as no vector. ``report`` counts the latter; ``on_window`` hears how many chunks each window updated."""
    writer = BulkWriter(engine, index)
    given = 0
    for start in range(0, len(hits), window):
        chunks = [chunk_from_source(hit.source) for hit in hits[start : start + window]]
        texts = [chunk.embedding_text for chunk in chunks]
        vectors = passage_vectors(embedder, texts)
        if report is not None:
            report.seen_as_nothing += seen_as_nothing(texts, vectors)
        given += sum(vector is not None for vector in vectors)
        updates: Iterable[BulkAction] = (
            BulkAction(
                "update",
                chunk.chunk_id,
                {VECTOR_FIELD: vector, "embedding": EMBEDDED if vector is not None else NOTHING_TO_EMBED},
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        )
        writer.write(updates)
        on_window(len(chunks))
    return given, list(writer.totals.failed)
