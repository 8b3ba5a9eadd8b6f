"""``esbridge ingest``'s run on an embedded engine with the hashing embedder, for tests of what it reports."""

from __future__ import annotations

from pathlib import Path

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.sources import SourceFormat
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder


def ingest_into(
    engine: EmbeddedEngine, index: str, path: Path, source_format: SourceFormat = "auto", **options: object
) -> IngestReport:
    """Ingest ``path`` into ``index`` (``options`` as ``IngestOptions`` takes them)."""
    embedder = HashingEmbedder()
    manager = IndexManager(engine, index, IndexParameters(dimension=embedder.dimension))
    return ingest(
        path,
        engine=engine,
        manager=manager,
        embedder=embedder,
        options=IngestOptions(source_format=source_format, **options),  # type: ignore[arg-type]
    )
