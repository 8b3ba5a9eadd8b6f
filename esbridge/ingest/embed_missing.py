"""``esbridge embed --missing``: give a vector to every chunk indexed while the model was unavailable."""

from __future__ import annotations

from collections.abc import Iterable

from esbridge import errors
from esbridge.embeddings.base import Embedder, nothing_seen_warning
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.bulk import BulkWriter
from esbridge.ingest.documents import AWAITING_VECTOR, EMBEDDED, NOTHING_TO_EMBED, chunk_from_source
from esbridge.ingest.model_record import (
    holds_vectors,
    model_to_record_with_missing,
    record_model,
    refuse_several_indices,
)
from esbridge.ingest.progress import ProgressFactory, no_progress
from esbridge.ingest.report import IngestReport, Timer, embed_window
from esbridge.ingest.run import mapped_dimension, write_block_warnings
from esbridge.mappings.schema import VECTOR_FIELD


def embed_missing(
    engine: Engine,
    index: str,
    embedder: Embedder,
    *,
    window: int = 512,
    progress: ProgressFactory = no_progress,
) -> IngestReport:
    """Give a vector to every chunk indexed without one (ingested while the model was unavailable)."""
    refuse_several_indices(engine, index, what="embed --missing")
    report = IngestReport(source="*", index=index)
    dimension = mapped_dimension(engine, index)
    if dimension is not None and dimension != embedder.dimension:
        raise errors.ConfigError(
            f"the model {embedder.name} makes {embedder.dimension}-dimensional vectors but {index} maps {dimension}"
        )
    identity = model_to_record_with_missing(engine, index, embedder)
    with Timer(report.timings, "index_s"):
        hits = list(
            engine.scan(
                index,
                {"term": {"embedding": AWAITING_VECTOR}},
                ["chunk_id", "doc_id", "chunk_index", "title", "headings", "body"],
                sort_field="chunk_id",
            )
        )
    writer = BulkWriter(engine, index)
    with progress("embedding", len(hits)) as bar:
        for start in range(0, len(hits), window):
            chunks = [chunk_from_source(hit.source) for hit in hits[start : start + window]]
            vectors = embed_window(chunks, embedder, report)
            updates: Iterable[BulkAction] = (
                BulkAction(
                    "update",
                    chunk.chunk_id,
                    {VECTOR_FIELD: vector, "embedding": EMBEDDED}
                    if vector is not None
                    # No text (indexed before such chunks were told apart), or none the model sees anything in.
                    else {"embedding": NOTHING_TO_EMBED},
                )
                for chunk, vector in zip(chunks, vectors, strict=True)
            )
            with Timer(report.timings, "index_s"):
                writer.write(updates)
            bar.update(len(chunks))
        engine.refresh(index)
    report.chunks_indexed = len(writer.totals.succeeded)
    # As ingest does: a later search or ingest with another model can then tell which one made the vectors.
    if identity is not None and holds_vectors(engine, index):
        record_model(engine, index, identity)
        report.model_recorded = identity.name
    report.failed.extend({"id": failure.id, "reason": failure.reason} for failure in writer.totals.failed)
    report.warnings.extend(write_block_warnings(writer.totals.failed, index))
    if report.seen_as_nothing:
        report.warnings.append(nothing_seen_warning(embedder, report.seen_as_nothing))
    return report
