"""Ingest: read a source, chunk it, embed what changed, write it, and remove what disappeared.

The index is the state: every chunk carries its ``source`` and a ``content_hash`` of everything
indexed for it. A run reads what the index holds for the source, writes only new or changed chunks
(embeddings of unchanged texts come from the cache), and then deletes the chunks that the source no
longer produces (deleted notes, shrunk notes, renames). Writes come before deletes and are idempotent
by chunk id, so an interrupted run that is run again converges to the same index. The index also
records which model made its vectors; a run with another model embeds every chunk again and only
then records it (``esbridge.ingest.model_record``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from esbridge import errors
from esbridge.embeddings.base import Embedder, nothing_seen_warning
from esbridge.engines.base import BulkAction, BulkItemFailure, Engine
from esbridge.engines.bulk import BulkWriter, RetryPolicy
from esbridge.ids import doc_id_of, shown_escaped, shown_path
from esbridge.ingest.chunking import approximate_token_count, chunk_document
from esbridge.ingest.documents import EMBEDDED, NOTHING_TO_EMBED, index_document
from esbridge.ingest.markdown import is_text
from esbridge.ingest.model import Chunk, Problem
from esbridge.ingest.model_record import (
    holds_vectors,
    mark_reembedding,
    plan_model,
    record_model,
    reembed_stored,
    refuse_several_indices,
    stored_to_reembed,
)
from esbridge.ingest.overlap import BackgroundWrites
from esbridge.ingest.progress import ProgressFactory, no_progress
from esbridge.ingest.refusals import (
    MAX_DELETE_SHARE,
    id_too_long,
    refuse_empty_source,
    refuse_foreign_documents,
    refuse_mass_delete,
    refuse_missing_fields,
)
from esbridge.ingest.report import IngestReport, Timer, cache_hits, embed_window
from esbridge.ingest.sources import SourceFormat, detect_format, looked_for, read_source
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import mapped_vector_dimension
from esbridge.query.concepts import build_concept_index, frequent_terms
from esbridge.text import is_blank

# Chunk sizes are counted with a deterministic estimate, not the model's tokenizer, so chunk
# boundaries (and ids) do not depend on whether or which model loaded. 200 estimated tokens keep
# nearly every chunk inside all-MiniLM-L6-v2's 256-token window (docs/ingest-markdown.md).
DEFAULT_MAX_TOKENS = 200


@dataclass(frozen=True)
class IngestOptions:
    source_format: SourceFormat = "auto"
    source: str | None = None
    max_tokens: int | None = None
    overlap_tokens: int = 32
    min_tokens: int = 24
    window: int = 512
    max_request_bytes: int = 5 * 1024 * 1024
    concepts: int = 0
    """Build the concept index from the index's bodies with this many terms (0: leave it alone)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_delete_share: float = MAX_DELETE_SHARE
    """Refuse, before writing anything, a run that would delete more than this share of the chunks the index
    holds for the source (and at least ``MASS_DELETE_MINIMUM`` of them); 1.0 allows any deletion."""


@dataclass(frozen=True)
class IndexedChunk:
    content_hash: str
    embedding: str
    """``documents.EMBEDDED``, ``AWAITING_VECTOR`` or ``NOTHING_TO_EMBED``"""


def indexed_chunks(engine: Engine, index: str, source: str) -> dict[str, IndexedChunk]:
    """What the index holds for ``source``: chunk id -> (content hash, the state of its vector)."""
    found: dict[str, IndexedChunk] = {}
    hits = engine.scan(index, {"term": {"source": source}}, ["content_hash", "embedding"], sort_field="chunk_id")
    for hit in hits:
        found[hit.id] = IndexedChunk(str(hit.source.get("content_hash", "")), str(hit.source.get("embedding")))
    return found


def mapped_dimension(engine: Engine, index: str) -> int | None:
    return mapped_vector_dimension(engine.get_mapping(index))


def ingest(
    path: Path,
    *,
    engine: Engine,
    manager: IndexManager,
    embedder: Embedder | None,
    options: IngestOptions | None = None,
    progress: ProgressFactory = no_progress,
) -> IngestReport:
    """Bring the index in line with the source at ``path``; see the module docstring."""
    options = options or IngestOptions()
    source = options.source or path.resolve().name
    if options.source and not is_text(source):
        raise errors.ConfigError(f"the source label {source!r} (--source) is not UTF-8 text; nothing was written")
    if not is_text(source):  # a folder or file name in another encoding: no engine takes it as a term
        raise errors.ConfigError(
            f"the name of {shown_path(path.resolve())}, the default source label, is not UTF-8 text; nothing was "
            "written. Give the source a label with --source"
        )
    report = IngestReport(source=source, index=manager.alias)
    if embedder is None:
        report.warnings.append(
            "no embedding model: chunks are indexed for lexical search only; fill in "
            "vectors later with `esbridge embed --missing`"
        )
    timings = report.timings
    # The source is read before the index is created, so one that cannot be read leaves no empty index.
    with Timer(timings, "parse_s"):
        chunks, problems, warned = _read_and_chunk(path, options)
    read = bool(warned)
    report.failed.extend({"id": problem.id, "reason": problem.reason} for problem in problems)
    if not read:  # a mistyped path, notes that are not .md files, an empty or wholly unreadable file
        current = manager.state().current
        if not problems:
            found = f"found no documents in {shown_path(path)} (read as {looked_for(path, options.source_format)})"
            refuse_empty_source(engine, current, path, source, found, allow=options.max_delete_share >= 1.0)
        elif current is None:  # each input failed: the failures are the report, and no empty index is made
            report.warnings.append(
                f"index {manager.alias} was not created: no document of {shown_path(path)} could be read"
            )
            return report

    refuse_several_indices(engine, manager.alias, what="ingest")
    index = report.index = manager.ensure()
    mapping = engine.get_mapping(index)
    properties = mapping.get("properties", {})
    refuse_missing_fields(
        properties, index, weighted=any(chunk.document and chunk.document.link_weights for chunk in chunks)
    )
    if embedder is not None:
        dimension = mapped_vector_dimension(mapping)
        if dimension is not None and dimension != embedder.dimension:
            raise errors.ConfigError(
                f"the model {embedder.name} makes {embedder.dimension}-dimensional vectors but index {index} maps "
                f"{dimension}; use the index's model, or ingest into a new index (--index NAME) with this one"
            )
    model = plan_model(engine, index, mapping, embedder)
    report.warnings.extend([model.warning] if model.warning else [])
    if model.reembed and model.record is not None:
        mark_reembedding(engine, index, model.record)

    with Timer(timings, "index_s"):
        refuse_foreign_documents(engine, path, index, source, chunks)
        before = indexed_chunks(engine, index, source)
    stale = _stale_chunks(before, chunks, problems, report)
    renamed = {old for chunk in chunks if chunk.document for old in chunk.document.replaces}
    removed = sum(1 for chunk_id in stale if doc_id_of(chunk_id) not in renamed)
    refuse_mass_delete(path, source, index, len(before), removed, options.max_delete_share)
    todo = [chunk for chunk in chunks if model.reembed or _needs_write(chunk, before.get(chunk.chunk_id), embedder)]
    report.unchanged = len(chunks) - len(todo)
    report.warnings.extend(_document_warnings(warned, {chunk.doc_id for chunk in todo}))

    # Writes go through the alias, not to the version it pointed to when the run began: a reindex that
    # finishes during the run moves the alias, and writes after it must land in the new version.
    alias = manager.alias
    writer = BulkWriter(engine, alias, max_bytes=options.max_request_bytes, retry=options.retry)
    written_docs: set[str] = set()

    def write(actions: list[BulkAction]) -> None:
        with Timer(timings, "index_s"):
            writer.write(actions)
        writer.totals.stop_if_unreachable(
            operation="ingest", index=alias, planned=len(todo), rerun=": it writes only what is missing"
        )

    try:
        with progress("indexing", len(todo)) as bar, BackgroundWrites() as writes:
            for window in _windows(todo, options.window):
                vectors = embed_window(window, embedder, report)
                actions = [
                    BulkAction(
                        "index",
                        chunk.chunk_id,
                        index_document(chunk, source=source, vector=vector, by_model=embedder is not None),
                    )
                    for chunk, vector in zip(window, vectors, strict=True)
                ]
                writes.submit(partial(write, actions))
                bar.update(len(window))
            writes.wait()
            succeeded = set(writer.totals.succeeded)
            for chunk in todo:
                if chunk.chunk_id in succeeded:
                    written_docs.add(chunk.doc_id)
    except KeyboardInterrupt as exc:  # raised once the write in flight has finished: the count is final
        written = len(writer.totals.succeeded)
        raise errors.IngestInterrupted(
            f"{written} of {len(todo)} chunk writes were done and are kept; run the command again: it writes only "
            "what is missing"
        ) from exc
    except errors.EmbeddingError as exc:  # raised once the write in flight has finished: the count is final
        written = len(writer.totals.succeeded)
        raise type(exc)(
            f"{exc.reason}; {written} of {len(todo)} chunks were written before it and are kept. Run the command "
            "again once the model works: it writes only what is missing",
            model=exc.model,
        ) from exc
    report.chunks_indexed = len(writer.totals.succeeded)
    report.documents_indexed = len(written_docs)
    report.without_vectors = sum(1 for chunk in todo if chunk.chunk_id in succeeded) if embedder is None else 0
    write_failures = list(writer.totals.failed)
    # A document whose new chunks were refused keeps its old ones whole, as an unreadable one does.
    refused_docs = {doc_id_of(failure.id) for failure in write_failures}
    stale = [chunk_id for chunk_id in stale if doc_id_of(chunk_id) not in refused_docs]

    with Timer(timings, "index_s"), _after_the_writes(report.chunks_indexed):
        if stale:
            deleter = BulkWriter(engine, alias, max_bytes=options.max_request_bytes, retry=options.retry)
            totals = deleter.write(BulkAction("delete", chunk_id) for chunk_id in stale)
            report.deleted = len(totals.succeeded)
            write_failures.extend(totals.failed)
        engine.refresh(alias)
    if model.reembed and embedder is not None:  # the other sources' chunks, and kept ones of unreadable records
        hits = cache_hits(embedder)
        with Timer(timings, "embed_s"):
            rest = stored_to_reembed(engine, alias, skip={chunk.chunk_id for chunk in todo})
            with progress("re-embedding the rest of the index", len(rest)) as bar:
                given, failures = reembed_stored(engine, alias, embedder, rest, report=report, on_window=bar.update)
        report.count_vectors(given, cache_hits(embedder) - hits)
        write_failures.extend(failures)
        engine.refresh(alias)
    to_record = None if model.reembed and write_failures else model.record
    if to_record is not None and (model.reembed or holds_vectors(engine, alias)):  # a new, empty index records none
        record_model(engine, alias, to_record)
        report.model_recorded = to_record.name
    report.failed.extend({"id": failure.id, "reason": failure.reason} for failure in write_failures)
    report.warnings.extend(write_block_warnings(write_failures, alias))
    if report.seen_as_nothing and embedder is not None:
        report.warnings.append(nothing_seen_warning(embedder, report.seen_as_nothing))
    if report.cut_by_model and embedder is not None:
        report.warnings.append(
            f"{report.cut_by_model} of {report.embedded + report.from_cache} chunk(s) embedded hold more than the "
            f"{embedder.max_tokens} tokens {embedder.name} reads: their vectors stand for their beginnings only (BM25 "
            "searches their whole text); a model or an [embedding] max_tokens that reads more embeds them whole"
        )
    if options.concepts and embedder is not None:
        with Timer(timings, "embed_s"):
            terms = frequent_terms(
                (
                    str(hit.source.get("body", ""))
                    for hit in engine.scan(alias, {"match_all": {}}, ["body"], sort_field="chunk_id")
                ),
                limit=options.concepts,
            )
            vocabulary = build_concept_index(engine, manager.alias, terms, embedder)
        report.warnings.extend(vocabulary.warnings(f"concepts of {manager.alias}"))
    return report


@contextmanager
def _after_the_writes(written: int) -> Iterator[None]:
    """An engine gone once every chunk write was done: the error says they were, and that a re-run finishes."""
    try:
        yield
    except errors.EngineUnavailable as exc:
        raise type(exc)(
            f"{exc.reason}, after all {written} chunk writes were done (they are kept). Run the command again once "
            "it answers: it writes only what is missing and removes what the sources no longer hold",
            url=exc.url,
            operation=exc.operation,
            index=exc.index,
        ) from exc


def write_block_warnings(failures: Iterable[BulkItemFailure], alias: str) -> list[str]:
    """A warning that counts the writes the index's write block refused and says what to do; none if none."""
    blocked = sum(1 for failure in failures if failure.write_blocked)
    if not blocked:
        return []
    return [
        f"{blocked} chunk write(s) were refused because the index behind {alias} is write-blocked: "
        "`esbridge index reindex` is copying it (or a reindex was interrupted: run it again). Nothing was "
        "written for them; run this command again once the reindex has finished, it writes only what is missing"
    ]


def _read_and_chunk(path: Path, options: IngestOptions) -> tuple[list[Chunk], list[Problem], dict[str, list[str]]]:
    """The chunks of the documents read, the problems, and each document read with its warnings."""
    max_tokens = options.max_tokens or DEFAULT_MAX_TOKENS
    chunks: list[Chunk] = []
    problems: list[Problem] = []
    seen: dict[str, list[str]] = {}
    notes = (detect_format(path) if options.source_format == "auto" else options.source_format) == "markdown"
    for item in read_source(path, options.source_format):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        # A record's path is as given (a registry record's may hold a line break): shown escaped, one line each.
        where = shown_escaped(item.path or item.doc_id)
        if item.doc_id in seen:
            reason = f"duplicate id {item.doc_id!r}; the first one was kept"
            problems.append(Problem(where, reason, doc_id=item.doc_id))
            continue
        seen[item.doc_id] = [f"{where}: {warning}" for warning in item.warnings]
        made = chunk_document(
            item,
            max_tokens=max_tokens,
            overlap_tokens=min(options.overlap_tokens, max_tokens // 4),
            min_tokens=min(options.min_tokens, max_tokens // 4),
            count_tokens=approximate_token_count,
        )
        too_long = id_too_long(made, item.path if notes else None)
        if too_long:  # refused whole, so the index keeps its old version rather than a mix of old and new
            problems.append(Problem(where, too_long, doc_id=item.doc_id))
            seen[item.doc_id] = []  # the failure says what became of it
            continue
        chunks.extend(made)
    return chunks, problems, seen


def _document_warnings(warned: dict[str, list[str]], written: set[str]) -> list[str]:
    """The warnings of the documents to be written; those of unchanged ones, given when they were, are counted."""
    shown = [warning for doc, warnings in warned.items() if doc in written for warning in warnings]
    quiet = [warnings for doc, warnings in warned.items() if doc not in written and warnings]
    if quiet:
        shown.append(
            f"{sum(map(len, quiet))} warning(s) about {len(quiet)} document(s) unchanged since they were indexed are "
            "not repeated"
        )
    return shown


def _needs_write(chunk: Chunk, indexed: IndexedChunk | None, embedder: Embedder | None) -> bool:
    if indexed is None or indexed.content_hash != chunk.content_hash:
        return True
    if is_blank(chunk.embedding_text):  # written with a vector of nothing before such chunks were left without one
        return indexed.embedding != NOTHING_TO_EMBED
    # One the model saw nothing in (NOTHING_TO_EMBED) is not embedded again while its text stays the same.
    return embedder is not None and indexed.embedding not in (EMBEDDED, NOTHING_TO_EMBED)


def _stale_chunks(
    before: dict[str, IndexedChunk], chunks: Sequence[Chunk], problems: Sequence[Problem], report: IngestReport
) -> list[str]:
    """Chunks the index holds for this source that the source no longer produces.

    Chunks of inputs that could not be read this time are kept: an unreadable file is a problem to
    fix, not a deletion. When a problem cannot be tied to a document, only the documents read this
    run lose their stale chunks: each is known whole (an id is read once per source), so chunks past
    its new end are orphans whatever else failed to read; so are the tools a registry server read this
    run no longer lists (``Document.doc_prefixes``).
    """
    current = {chunk.chunk_id for chunk in chunks}
    stale = [chunk_id for chunk_id in before if chunk_id not in current]
    if not stale or not problems:
        return stale
    read = {chunk.doc_id for chunk in chunks}
    protected = {problem.doc_id for problem in problems}
    if None in protected:
        owned = tuple({prefix for chunk in chunks if chunk.document for prefix in chunk.document.doc_prefixes})

        def known_whole(doc: str) -> bool:
            # A tool of a server read whole is gone, unless it is a problem itself (refused for its long ids).
            return doc in read or (doc not in protected and bool(owned and doc.startswith(owned)))

        kept = sum(1 for chunk_id in stale if not known_whole(doc_id_of(chunk_id)))
        if kept:
            report.warnings.append(
                f"{kept} chunk(s) no longer in the source were kept because some records could not be read; "
                "fix them and run again to remove the rest"
            )
        return [chunk_id for chunk_id in stale if known_whole(doc_id_of(chunk_id))]
    prefixes = tuple(prefix for problem in problems for prefix in problem.doc_prefixes)
    return [
        chunk_id
        for chunk_id in stale
        if (doc := doc_id_of(chunk_id)) in read
        or (doc not in protected and not (prefixes and doc.startswith(prefixes)))
    ]


def _windows(chunks: Sequence[Chunk], size: int) -> Iterator[Sequence[Chunk]]:
    for start in range(0, len(chunks), size):
        yield chunks[start : start + size]
