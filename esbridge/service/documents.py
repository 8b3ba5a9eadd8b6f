"""Upserting and deleting documents one batch at a time, with the ingest pipeline's validation and chunking.

Every record goes through ``JsonlRecord`` exactly as a line of a JSONL file would (or, asked for, through
``RegistryRecord`` as a line of a registry file: ``esbridge.service.records``), so the API and ``esbridge ingest``
accept the same records and index them identically. A record that fails
validation, or whose chunks the engine refuses, is reported on its own; the rest are written. An
upsert replaces the document: chunks it no longer produces (it got shorter) are deleted after the
new ones are written. These functions block (engine and model calls); the service runs them in a
worker thread, which cancels them between steps when their request times out, and apply the refresh
policy (``esbridge.service.writes``) before returning.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from esbridge import errors
from esbridge.embeddings.base import Embedder, nothing_seen_warning, passage_vectors, passages_cut, seen_as_nothing
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.bulk import MAX_ID_BYTES, BulkWriter, RetryPolicy
from esbridge.ingest.chunking import approximate_token_count, chunk_document
from esbridge.ingest.documents import index_document
from esbridge.ingest.model import Chunk, Document
from esbridge.ingest.model_record import model_to_record_first, record_model, refuse_several_indices
from esbridge.ingest.run import DEFAULT_MAX_TOKENS
from esbridge.service.errors import ServiceError
from esbridge.service.models import DocumentResult
from esbridge.service.records import (
    Given,
    RecordFormat,
    document_warnings,
    given_id,
    owned_chunks,
    owned_documents,
    read_record,
)
from esbridge.service.writes import DOCUMENT_LOCKS, Cancellation, WriteControl, chunk_hashes

# A request waits for its answer, so the engine gets a few quick retries, not ingest's long backoff.
REQUEST_RETRY = RetryPolicy(attempts=3, initial_delay_s=0.2, max_delay_s=2.0)
# Texts embedded per call between cancellation checks: at most this many, and as many as take a quarter of the
# grace a timed-out write has to stop (measured as it goes), so a write cut off while embedding stops in time.
_EMBED_STEP = 64
_FIRST_EMBED_STEP = 4
# Link targets looked up per terms query, well below the engines' default index.max_terms_count (65,536).
_LOOKUP_STEP = 10_000


@dataclass
class UpsertOutcome:
    results: list[DocumentResult]
    warnings: list[str] = field(default_factory=list)
    visible: bool = True


@dataclass
class Batch:
    """A request's records as read (``read``): each refused one's result, the valid ones by position, and every
    document id the valid ones make -> the position of the record making it."""

    size: int
    results: dict[int, DocumentResult] = field(default_factory=dict)
    valid: dict[int, Given] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    read: int = 0
    """How many of the records were read: all, unless they went over ``read``'s ``limit`` before the last."""


def read(
    records: Sequence[Mapping[str, Any]], record_format: RecordFormat = "jsonl", *, limit: int | None = None
) -> Batch:
    """``records`` read as ``record_format`` (``esbridge.service.records``): ``first`` counts the documents a write
    of them makes, a registry record's tools and skills included. Reading stops at the record that takes that count
    over ``limit``, as the batch will be refused (``refuse_over``) whatever the rest hold."""
    batch = Batch(len(records))
    results, valid, first = batch.results, batch.valid, batch.first
    for position, data in enumerate(records):
        if limit is not None and len(first) > limit:
            break
        batch.read = position + 1
        given = read_record(data, record_format)
        if isinstance(given, str):
            found = given_id(data, record_format)
            results[position] = DocumentResult(position=position, id=found, status="error", error=given)
            continue
        taken = next((doc_id for doc_id in given.ids if doc_id in first), None)
        if taken is not None:
            reason = f"duplicate id {taken!r} in this batch (first at position {first[taken]})"
            results[position] = DocumentResult(position=position, id=given.id, status="error", error=reason)
            continue
        first.update(dict.fromkeys(given.ids, position))
        valid[position] = given
    return batch


def refuse_records_over(count: int, record_format: RecordFormat, limit: int) -> None:
    """Refuse, before reading any, more than ``limit`` records (422, nothing written): each makes one document at
    least, a registry record one more per tool and skill."""
    if count > limit:
        made = f"at least {count}" if record_format == "registry" else str(count)
        _refuse(f"the {count} record(s) make {made} documents", limit, tools=record_format == "registry")


def refuse_over(batch: Batch, limit: int) -> None:
    """Refuse the batch (422, nothing written) when its records make more than ``limit`` documents: a registry
    record makes one per tool and skill besides its own, so that a few records may make many."""
    made = len(batch.first)
    if made > limit:
        which = f"the {batch.size} record(s) make" if batch.read == batch.size else (
            f"the first {batch.read} of the {batch.size} record(s) already make"
        )  # fmt: skip
        _refuse(f"{which} {made} documents", limit, tools=True)


def _refuse(made: str, limit: int, *, tools: bool) -> None:
    note = " (a registry record's tools and skills count as documents of their own)" if tools else ""
    problem = (
        f"{made}{note}; at most {limit} per request (service.max_documents): nothing was written; send them in "
        "several requests"
    )
    raise ServiceError(422, "validation", f"body.documents: {problem}", fields=[("body.documents", problem)])


def upsert(
    engine: Engine,
    index: str,
    embedder: Embedder | None,
    records: Sequence[Mapping[str, Any]],
    *,
    source: str,
    record_format: RecordFormat = "jsonl",
    retry: RetryPolicy = REQUEST_RETRY,
    control: WriteControl | None = None,
) -> UpsertOutcome:
    """Validate, chunk, embed and write ``records`` (read as ``record_format``, ``esbridge.service.records``); one
    result per record, in order. Raises ``WriteCancelled`` when ``control.cancel`` is set before anything was
    written."""
    return write(engine, index, embedder, read(records, record_format), source=source, retry=retry, control=control)


def write(
    engine: Engine,
    index: str,
    embedder: Embedder | None,
    batch: Batch,
    *,
    source: str,
    retry: RetryPolicy = REQUEST_RETRY,
    control: WriteControl | None = None,
) -> UpsertOutcome:
    """Chunk, embed and write the valid records of ``batch`` (``upsert``)."""
    control = control or WriteControl()
    results, valid, first = batch.results, batch.valid, batch.first
    outcome = UpsertOutcome([])
    if valid:
        _refuse_several_targets(engine, index)
        with DOCUMENT_LOCKS.held(index, first, control.cancel):
            known = set(first) | _existing_docs(engine, index, {t for g in valid.values() for t in g.link_targets})
            read = {position: given.made(known) for position, given in valid.items()}
            warnings = {position: document_warnings(valid[position], docs) for position, docs in read.items()}
            chunks = {position: [c for doc in docs for c in _chunks(doc)] for position, docs in read.items()}
            for position, reason in _ids_too_long(chunks).items():  # refused whole, not cut off after some chunks
                given = valid.pop(position)
                del chunks[position]
                results[position] = DocumentResult(
                    position=position, id=given.id, status="error", error=reason, warnings=warnings[position]
                )
            made = {doc_id: position for doc_id, position in first.items() if position in valid}
            owner = {**owned_documents(engine, index, valid), **made}
            written = (
                _write(engine, index, embedder, chunks, owner, source, retry, outcome, control.cancel) if valid else {}
            )
            for position, given in valid.items():
                problem = written.get(position)
                results[position] = DocumentResult(
                    position=position,
                    id=given.id,
                    status="error" if problem else "ok",
                    chunks=0 if problem else len(chunks[position]),
                    error=problem,
                    warnings=warnings[position],
                )
            kept = [c for position, group in chunks.items() if position not in written for c in group]
            expected = chunk_hashes([(c.doc_id, c.chunk_id, c.content_hash) for c in kept])
            for doc_id, position in owner.items():  # a document with no chunks left (or no longer made) shows none
                if doc_id not in expected and position not in written:
                    expected[doc_id] = {}
            outcome.visible = control.finish(engine, index, expected)
    outcome.results = [results[position] for position in range(batch.size)]
    return outcome


@dataclass
class Deleted:
    """What a delete removed: the document ``id`` and how many of its chunks (0: none, no such document), and the
    tools and skills it owned (a registry record's, ``records.owned_documents``) with their chunks counted too."""

    id: str
    chunks: int = 0
    owned: list[str] = field(default_factory=list)


def delete(
    engine: Engine,
    index: str,
    doc_id: str,
    *,
    retry: RetryPolicy = REQUEST_RETRY,
    control: WriteControl | None = None,
) -> Deleted:
    """Delete every chunk of ``doc_id`` and of the tools and skills it owns, those first: a delete cut off between
    the two and sent again still finds the record, and a search never finds a tool whose server is gone."""
    control = control or WriteControl()
    with DOCUMENT_LOCKS.held(index, [doc_id], control.cancel):
        chunk_ids = [hit.id for hit in _chunks_of(engine, index, [doc_id])]
        if not chunk_ids:
            return Deleted(doc_id)
        _refuse_several_targets(engine, index)
        owned_by = owned_chunks(engine, index, doc_id)
        owned = sorted(owned_by)
        control.cancel.begin("deleting")
        deleted = _delete_chunks(engine, index, [chunk for key in owned for chunk in owned_by[key]], retry)
        deleted += _delete_chunks(engine, index, chunk_ids, retry)
        control.finish(engine, index, {key: {} for key in [doc_id, *owned]})
    return Deleted(doc_id, deleted, owned)


def _delete_chunks(engine: Engine, index: str, chunk_ids: Sequence[str], retry: RetryPolicy) -> int:
    """Delete ``chunk_ids``; how many were; an engine error naming the first that failed."""
    totals = BulkWriter(engine, index, retry=retry).write(BulkAction("delete", chunk_id) for chunk_id in chunk_ids)
    if totals.failed:
        failure = totals.failed[0]
        # A write block (a reindex), an engine out of reach or overloaded, another process holding the embedded
        # writer lock: passing states, not engine faults, so the client may retry.
        error: type[errors.EngineError] = errors.EngineResponseError
        if failure.write_blocked:
            error = errors.IndexWriteBlocked
        elif failure.retryable or totals.unreachable is not None:
            error = errors.EngineUnavailable
        raise error(
            f"{len(totals.failed)} chunk(s) not deleted: {failure.reason}",
            url=engine.url,
            operation="delete document",
            index=index,
            status=failure.status or None,
        )
    return len(totals.succeeded)


def delete_first(engine: Engine, index: str, doc_ids: Sequence[str], *, control: WriteControl | None = None) -> Deleted:
    """Delete the first of ``doc_ids`` the index holds (``delete``); the last id with nothing deleted if none."""
    for doc_id in doc_ids:
        deleted = delete(engine, index, doc_id, control=control)
        if deleted.chunks:
            return deleted
    return Deleted(doc_ids[-1])


def _next_step(texts: int, took_s: float, grace_s: float) -> int:
    """How many texts to embed next, ``texts`` having taken ``took_s``: as many as take a quarter of ``grace_s``
    (at least 0.1 s), from 1 to ``_EMBED_STEP``."""
    if took_s <= 0:
        return _EMBED_STEP
    return max(1, min(_EMBED_STEP, int(max(0.1, grace_s / 4) * texts / took_s)))


def _refuse_several_targets(engine: Engine, index: str) -> None:
    """An alias over several indices (a rollback that added the old version back and left the new one) takes
    writes into its write index only while searches read them all: a deleted document would still be found. A
    data stream refuses writes by id."""
    targets = engine.alias_targets(index)
    if len(targets) > 1:
        raise errors.AmbiguousAlias(
            f"alias {index!r} points to several indices ({', '.join(targets)}): a write would reach only one of "
            "them while searches read them all; nothing was written. Point the alias at one index (POST _aliases), "
            "then write again"
        )
    if not targets:  # (no alias: an index, or a data stream)
        refuse_several_indices(engine, index, what="the sidecar")


def _ids_too_long(chunks: Mapping[int, Sequence[Chunk]]) -> dict[int, str]:
    """Why each document with a chunk id longer than the engines take is refused: the engine would take its first
    chunks and refuse the rest, leaving part of it searchable under an answer that says it failed."""
    refused: dict[int, str] = {}
    for position, group in chunks.items():
        sizes = {chunk.chunk_id: len(chunk.chunk_id.encode("utf-8")) for chunk in group}
        longest = max(sizes, key=sizes.__getitem__, default=None)
        if longest is not None and sizes[longest] > MAX_ID_BYTES:
            refused[position] = (
                f"chunk {longest}: id is {sizes[longest]} bytes long; engines accept at most {MAX_ID_BYTES} (shorten "
                f"the record's id): none of its {len(group)} chunks was written"
            )
    return refused


def _chunks(document: Document) -> list[Chunk]:
    return chunk_document(
        document,
        max_tokens=DEFAULT_MAX_TOKENS,
        overlap_tokens=32,
        min_tokens=24,
        count_tokens=approximate_token_count,
    )


def _existing_docs(engine: Engine, index: str, doc_ids: set[str]) -> set[str]:
    """Which of ``doc_ids`` the index holds, so links to documents written earlier resolve."""
    return {str(hit.source.get("doc_id")) for hit in _chunks_of(engine, index, sorted(doc_ids))}


def _chunks_of(engine: Engine, index: str, doc_ids: Sequence[str]) -> list[Any]:
    """The chunks of ``doc_ids``, asked in parts: one record's links, or a batch of registry records' tools, may
    name more documents than a terms query takes (``index.max_terms_count``, 65,536)."""
    found: list[Any] = []
    for start in range(0, len(doc_ids), _LOOKUP_STEP):
        query = {"terms": {"doc_id": list(doc_ids[start : start + _LOOKUP_STEP])}}
        found.extend(engine.scan(index, query, ["doc_id", "chunk_id"], sort_field="chunk_id"))
    return found


def _write(
    engine: Engine,
    index: str,
    embedder: Embedder | None,
    chunks: Mapping[int, Sequence[Chunk]],
    owner: Mapping[str, int],
    source: str,
    retry: RetryPolicy,
    outcome: UpsertOutcome,
    cancel: Cancellation,
) -> dict[int, str]:
    """Write every chunk, then drop the chunks of ``owner``'s documents (doc id -> the position of its record) that
    no longer exist, unless their record failed; position -> why the record failed."""
    flat = [chunk for group in chunks.values() for chunk in group]
    vectors: list[Sequence[float] | None] = [None] * len(flat)
    to_record = None
    if embedder is None:
        outcome.warnings.append("no embedding model: documents were indexed for lexical search only")
    else:
        to_record = model_to_record_first(engine, index, embedder)  # vectors of two models must not mix in one index
        cut = unseen = 0
        start, step = 0, _FIRST_EMBED_STEP
        while start < len(flat):
            cancel.check(
                "embedding" if start == 0 else f"embedding the rest ({start} of {len(flat)} chunks were embedded)"
            )
            texts = [chunk.embedding_text for chunk in flat[start : start + step]]
            began = time.monotonic()
            found = passage_vectors(embedder, texts)
            step = _next_step(len(texts), time.monotonic() - began, cancel.grace_s)
            vectors[start : start + len(texts)] = found
            cut += passages_cut(embedder, texts)
            unseen += seen_as_nothing(texts, found)
            start += len(texts)
        if unseen:
            outcome.warnings.append(nothing_seen_warning(embedder, unseen))
        if cut:
            outcome.warnings.append(
                f"{cut} of {len(flat)} chunk(s) hold more than the {embedder.max_tokens} tokens {embedder.name} reads: "
                "their vectors stand for their beginnings only (BM25 searches their whole text)"
            )
    before = {hit.id: str(hit.source.get("doc_id")) for hit in _chunks_of(engine, index, sorted(owner))}
    cancel.begin("writing")
    writer = BulkWriter(engine, index, retry=retry)
    totals = writer.write(
        BulkAction(
            "index", chunk.chunk_id, index_document(chunk, source=source, vector=vector, by_model=embedder is not None)
        )
        for chunk, vector in zip(flat, vectors, strict=True)
    )
    with_vector = {chunk.chunk_id for chunk, vector in zip(flat, vectors, strict=True) if vector is not None}
    if to_record is not None and not with_vector.isdisjoint(totals.succeeded):  # a record must name real vectors
        record_model(engine, index, to_record)
    problems: dict[int, str] = {}
    position_of = {chunk.chunk_id: position for position, group in chunks.items() for chunk in group}
    for failure in totals.failed:
        problems.setdefault(position_of[failure.id], f"chunk {failure.id}: {failure.reason}")
    stale = [
        chunk_id
        for chunk_id, doc_id in before.items()
        if chunk_id not in position_of and owner.get(doc_id) not in problems
    ]
    if stale:
        removed = BulkWriter(engine, index, retry=retry).write(BulkAction("delete", chunk_id) for chunk_id in stale)
        for failure in removed.failed:
            outcome.warnings.append(f"an old chunk {failure.id} was not deleted: {failure.reason}")
    return problems
