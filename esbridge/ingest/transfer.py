"""Moving an index between engines without re-embedding: JSONL with every stored field, vectors included.

The first line is a header (format version, vector dimension, the index parameters it was built
with, the chunk count); every other line is one chunk's stored fields with its id. Import writes
chunks with their ids, content hashes and vectors unchanged, so a later ``esbridge ingest`` of the
same source finds them unchanged, and searches answer as they did on the source engine. A chunk line
that is not UTF-8 or not JSON fails alone, reported with its line number; a gzipped export is read as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, replace
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import IO, Any

from esbridge import errors
from esbridge.config.files import creation_mode
from esbridge.embeddings.identity import (
    SAME_MODEL_COSINE,
    ModelIdentity,
    compare,
    parse_identity,
    pending_identity,
    recorded_identity,
    unfinished_warning,
)
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.bulk import BulkWriter, RetryPolicy
from esbridge.engines.vector_options import unavailable
from esbridge.ids import shown_path
from esbridge.ingest.export_file import FORMAT, VERSION, ChunkLine, CutShort, Export, header_parameters, read_export
from esbridge.ingest.json_values import describe_value
from esbridge.ingest.model_record import (
    holds_vectors,
    record_model,
    refuse_several_indices,
)
from esbridge.ingest.overlap import BackgroundWrites
from esbridge.ingest.vector_agreement import export_agreement
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import live_parameters
from esbridge.mappings.schema import FIELDS, VECTOR_FIELD, IndexParameters, mapped_vector_dimension

STORED_FIELDS = tuple(spec.name for spec in FIELDS)
IMPORT_WINDOW = 1000
"""Chunks handed to the writer at a time (one bulk request each, unless larger than its byte limit)."""
AGREEMENT_LOOK_AHEAD = 10_000
"""Chunk lines at most that the vector agreement of an index that records no model reads (and keeps, to write them
next) before the import writes anything."""


def export_chunks(engine: Engine, manager: IndexManager, out: IO[str]) -> int:
    """Write the header and every chunk behind the alias to ``out``; return how many chunks."""
    index = manager.current()
    params = live_parameters(engine, index, manager.params)
    header = {"format": FORMAT, "version": VERSION, "parameters": asdict(params), "chunks": engine.count(index)}
    mapping = engine.get_mapping(index)
    recorded = recorded_identity(mapping, index)
    if recorded is not None:  # the importing index then records the model its vectors came from
        header["model"] = recorded.to_meta()
    pending = pending_identity(mapping, index)
    if pending is not None:  # the header's model is not that of every vector
        warnings.warn(unfinished_warning(index, pending), errors.EsbridgeWarning, stacklevel=2)
    out.write(json.dumps(header) + "\n")
    written = 0
    for hit in engine.scan(index, {"match_all": {}}, STORED_FIELDS, sort_field="chunk_id"):
        out.write(json.dumps({"_id": hit.id, **dict(hit.source)}, ensure_ascii=False) + "\n")
        written += 1
    if written != header["chunks"]:
        warnings.warn(
            f"{index} changed while it was exported: it held {header['chunks']} chunks when the export began, and "
            f"{written} were written, so an import will report the difference from the count in the header; "
            "export again when nothing writes to the index",
            errors.EsbridgeWarning,
            stacklevel=2,
        )
    return written


def export_to_file(engine: Engine, manager: IndexManager, target: Path) -> int:
    """Export into ``target`` through a temporary file beside it, renamed over ``target`` only once the
    export is complete, so a failed export leaves an earlier file as it was.

    A ``target`` that exists and is not a regular file (a named pipe, ``/dev/stdout``) is written as it is,
    as a rename would put a file in its place; a symbolic link is followed, so it still points at the export.
    """
    if target.exists() and not target.is_file():
        with target.open("w", encoding="utf-8") as out:
            return export_chunks(engine, manager, out)
    target = Path(os.path.realpath(target))
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        # os.open applies the umask as open() would; NamedTemporaryFile would make the file owner-only. An owner-only
        # target stays so while its replacement is written.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, creation_mode(target))
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            count = export_chunks(engine, manager, out)
        if target.exists():
            shutil.copymode(target, temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return count


def refuse_what_the_index_cannot_take(
    engine: Engine, alias: str, path: Path, params: IndexParameters, model: ModelIdentity | None
) -> None:
    """Refuse an import into an existing index, before anything is written, when the index cannot take the
    export's chunks: vectors of another dimension (each chunk would fail with the engine's message), vectors
    another model made or an index whose re-embedding with another model did not finish (the index would hold two
    spaces under one record), an index esbridge did not make (no vector field), or a field its mapping lacks
    (an index made by an older esbridge has no ``link_weights``)."""
    name = shown_path(path.name)
    try:
        mapping = engine.get_mapping(alias)
    except errors.IndexNotFound:  # import creates it, with every field
        return
    dimension = mapped_vector_dimension(mapping)
    if dimension is None:
        # A dynamic mapping would take the vectors as plain numbers, which no kNN search reads.
        raise errors.ConfigError(
            f"index {alias} maps no vector field {VECTOR_FIELD!r} (esbridge did not make it), so its kNN search "
            f"could not read {name}'s vectors; nothing was written. Import into another index (--index NAME), "
            "which is created with the export's parameters"
        )
    if dimension != params.dimension:
        raise errors.DimensionMismatch(
            f"index {alias} holds {dimension}-dimensional vectors, but {name}'s are "
            f"{params.dimension}-dimensional; nothing was written. Import into another index (--index NAME), which "
            "is created with the export's parameters"
        )
    recorded = recorded_identity(mapping, alias)
    pending = pending_identity(mapping, alias)
    if pending is not None and engine.count(alias) > 0:
        # The mark does not say which chunks hold which model's vectors; only a finished re-embedding does.
        made_by = f"made by {model.name}" if model is not None else "whose model its header does not name"
        raise errors.ModelMismatch(
            f"{unfinished_warning(alias, pending)}. {name}'s vectors ({made_by}) would be added to vectors of "
            "two models under one record, so nothing was written. Finish the re-embedding first (`esbridge ingest` "
            f"with [embedding] model = {pending.name!r}), or import into another index (--index NAME)",
            index=alias,
            index_model=f"{recorded.describe() if recorded else 'not recorded'}, and {pending.describe()}",
            query_model=model.describe() if model is not None else "not recorded",
        )
    if recorded is not None and model is not None and not (verdict := compare(recorded, model)).compatible:
        raise errors.ModelMismatch(
            f"index {alias} holds vectors made by {recorded.describe()}, but {name}'s were made by "
            f"{model.describe()}; they differ in {'; '.join(verdict.differences)}, so nothing was written. Import "
            "into another index (--index NAME)",
            index=alias,
            index_model=recorded.describe(),
            query_model=model.describe(),
        )
    lacking = set(STORED_FIELDS) - set(mapping.get("properties", {}))
    if not lacking:  # a strict mapping would refuse such chunks, a dynamic one guess the fields' types
        return
    _, lines = read_export(path)  # read a second time only for such an index
    missing = sorted({name for _, chunk in lines if isinstance(chunk, dict) for name in chunk} & lacking)
    if missing:
        raise errors.ConfigError(
            f"index {alias} has no mapping for {', '.join(missing)}, which {name}'s chunks carry; nothing was "
            "written. Add the fields with `esbridge mapping apply` (`esbridge mapping diff` shows the change)"
        )


def needs_vector_agreement(engine: Engine, alias: str, model: ModelIdentity | None) -> bool:
    """Whether the export's model may be recorded in ``alias`` only once its vectors agree with the index's: an index
    that records no model but holds vectors (made before esbridge recorded models) says which model made them by
    its vectors, as for an ingest."""
    if model is None or not engine.index_exists(alias):
        return False
    mapping = engine.get_mapping(alias)
    if recorded_identity(mapping, alias) is not None or pending_identity(mapping, alias) is not None:
        return False
    return holds_vectors(engine, alias)


def vectors_agree_with_export(
    engine: Engine, alias: str, name: str, model: ModelIdentity, chunks: Iterable[Mapping[str, Any]]
) -> bool:
    """For an index ``needs_vector_agreement`` names: whether the export's model (``model``, which made ``chunks``,
    the first chunks of the export called ``name``) may be recorded. The stored vectors of the chunks the export
    holds too are compared with the export's, and an import of another model's vectors is refused. When no chunk
    is in both, nothing tells, and the import records no model (with a warning)."""
    agreed = export_agreement(engine, alias, chunks)
    if agreed is not None and agreed < SAME_MODEL_COSINE:
        raise errors.ModelMismatch(
            f"index {alias} records no embedding model, and its vectors were not made by {model.describe()}, which "
            f"made {name}'s: the vectors of chunks both hold have cosine {agreed:.2f} (the same model gives "
            f"{SAME_MODEL_COSINE} or more), so nothing was written. Import into another index (--index NAME), or "
            f"re-embed this one first (`esbridge ingest` with [embedding] model = {model.name!r} re-embeds every "
            "chunk)",
            index=alias,
            index_model="not recorded",
            query_model=model.describe(),
        )
    if agreed is None:
        warnings.warn(
            f"index {alias} records no embedding model and holds vectors, and none of {name}'s first chunks is among "
            f"them, so nothing tells whether {model.name} made them: the import records no model. If it did, "
            "`esbridge index record-model` with it configured records it",
            errors.EsbridgeWarning,
            stacklevel=3,
        )
        return False
    return True


def _looked_ahead(lines: Iterator[ChunkLine], limit: int) -> tuple[list[ChunkLine], Iterator[Mapping[str, Any]]]:
    """The lines the agreement reads, kept to be written after it (the file is read once), and the chunks it reads:
    at most ``limit`` lines."""
    kept: list[ChunkLine] = []

    def chunks() -> Iterator[Mapping[str, Any]]:
        for item in islice(lines, limit):
            kept.append(item)
            if isinstance(item[1], dict):
                yield item[1]

    return kept, chunks()


def encoding_this_engine_has(engine: Engine, alias: str, params: IndexParameters, path: Path) -> IndexParameters:
    """``params`` for a new index ``alias``, or with float vectors when their quantization is one this engine lacks
    (an Elasticsearch index's int4 or bbq, moved to OpenSearch): the export holds them as floats, nothing is lost."""
    if params.vector_encoding == "float" or engine.index_exists(alias):
        return params
    why = unavailable(engine.dialect, engine.probe().version, params.vector_encoding)
    if why is None:
        return params
    name = shown_path(path.name)
    warnings.warn(
        f"{name}'s vectors were stored as {params.vector_encoding} where they were exported, but {why}: a new "
        "index stores them as float ([mapping] vector_encoding and `esbridge index reindex` change that later)",
        errors.EsbridgeWarning,
        stacklevel=2,
    )
    return replace(params, vector_encoding="float")


def import_chunks(
    engine: Engine,
    alias: str,
    path: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[int, list[dict[str, str]]]:
    """Load an export into ``alias`` (created with the export's parameters, but ``overrides``, if missing); no
    re-embedding. The file is read once, but for an index whose mapping lacks a field (read twice)."""
    with Export(path) as export:
        return _import(engine, alias, export, overrides or {}, retry)


def _import(
    engine: Engine, alias: str, export: Export, overrides: Mapping[str, Any], retry: RetryPolicy | None
) -> tuple[int, list[dict[str, str]]]:
    path, header = export.path, export.header
    refuse_several_indices(engine, alias, what="import")
    name = shown_path(path.name)
    params = replace(header_parameters(header, path), **overrides)
    given = header.get("model")
    model = parse_identity(given, f"the model in {name}'s header") if given is not None else None
    refuse_what_the_index_cannot_take(engine, alias, path, params, model)
    lines = export.lines()
    if model is not None and needs_vector_agreement(engine, alias, model):
        ahead, chunks = _looked_ahead(lines, AGREEMENT_LOOK_AHEAD)
        model = model if vectors_agree_with_export(engine, alias, name, model, chunks) else None
        lines = chain(ahead, lines)
    empty = not engine.index_exists(alias) or (
        engine.count(alias) == 0 and recorded_identity(engine.get_mapping(alias), alias) is None
    )
    IndexManager(engine, alias, encoding_this_engine_has(engine, alias, params, path)).ensure()
    # Recorded once the first of its vectors is written (an empty index's vectors are all the export's), so an import
    # stopped part-way still refuses other models, and one whose first writes failed (refused, interrupted, the
    # engine gone), or that writes no vector, records none, as an empty ingest: a record must name real vectors.
    record_first, with_vectors = model if empty else None, set[str]()
    failed: list[dict[str, str]] = []
    seen = 0

    def actions() -> Iterator[BulkAction]:
        nonlocal seen
        for number, chunk in lines:
            seen += not isinstance(chunk, CutShort)
            if isinstance(chunk, str):
                failed.append({"id": f"{name}:{number}", "reason": chunk})
                continue
            chunk_id = chunk.pop("_id")
            vector = chunk.get(VECTOR_FIELD)
            if vector is not None and not isinstance(vector, list):
                failed.append({"id": chunk_id, "reason": f"vector is {describe_value(vector)}, not a list of numbers"})
                continue
            if vector is not None and len(vector) != params.dimension:
                failed.append(
                    {"id": chunk_id, "reason": f"vector of {len(vector)} dimensions, index has {params.dimension}"}
                )
                continue
            if vector is not None:
                with_vectors.add(chunk_id)
            yield BulkAction("index", chunk_id, chunk)

    # Through the alias, not to its current version, so a reindex that moves it meanwhile loses nothing.
    writer = BulkWriter(engine, alias, retry=retry)

    def stop_when_gone(_: int) -> None:
        writer.totals.stop_if_unreachable(operation="import", index=alias)

    def write(window: list[BulkAction]) -> None:
        nonlocal record_first
        done = len(writer.totals.succeeded)
        writer.write(window, on_batch=stop_when_gone)
        if record_first is not None and not with_vectors.isdisjoint(writer.totals.succeeded[done:]):
            record_model(engine, alias, record_first)
            record_first = None

    try:
        # In a worker thread, so Ctrl-C (always raised in the main thread) stops the import between writes: a
        # write under way finishes (recording the model if it wrote the first vectors) and is counted, and the
        # count said to be kept is what the index holds.
        with BackgroundWrites() as writes:
            for window in _windows(actions(), IMPORT_WINDOW):
                writes.submit(partial(write, window))
            writes.wait()
        totals = writer.totals
    except KeyboardInterrupt as exc:
        raise errors.IngestInterrupted(
            f"{len(set(writer.totals.succeeded))} chunks were imported into {alias} and are kept; run the command "
            "again to import the rest (it writes the same chunks again, unchanged)"
        ) from exc
    failed.extend({"id": failure.id, "reason": failure.reason} for failure in totals.failed)
    engine.refresh(alias)
    wrote_vectors = not with_vectors.isdisjoint(totals.succeeded)
    if model is not None and wrote_vectors and recorded_identity(engine.get_mapping(alias), alias) is None:
        record_model(engine, alias, model)
    expected = header.get("chunks")
    if isinstance(expected, int) and not isinstance(expected, bool) and seen != expected:
        # An export cut short (an interrupted `esbridge export > FILE`) ends on a whole line and parses fine.
        failed.append({"id": name, "reason": f"the header announces {expected} chunks but the file holds {seen} lines"})
    imported = len(set(totals.succeeded))
    if imported < len(totals.succeeded):
        # A later line with an id written before replaces that chunk: the index holds one chunk for both.
        warnings.warn(
            f"{name} holds {len(totals.succeeded) - imported} chunk line(s) whose _id an earlier line has; each "
            f"replaced the earlier chunk, so {imported} distinct chunks were imported",
            errors.EsbridgeWarning,
            stacklevel=2,
        )
    return imported, failed


def _windows(actions: Iterable[BulkAction], size: int) -> Iterator[list[BulkAction]]:
    window: list[BulkAction] = []
    for action in actions:
        window.append(action)
        if len(window) >= size:
            yield window
            window = []
    if window:
        yield window
