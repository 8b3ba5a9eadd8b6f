"""A small vault and one ingest run against a live engine, shared by the ingest integration tests; and an ingest on
the hashing embedder (`ingest_into`) for the unit tests of what an ingest reports."""

from __future__ import annotations

from pathlib import Path

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.sources import SourceFormat
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder

LONG_SECTION = " ".join(f"Sentence {n} about tidal energy and turbines in estuaries." for n in range(120))


def write_vault(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "alpha.md").write_text(
        "---\ntitle: Alpha note\ntags: [energy]\nmodified: 2026-11-01\n---\n# Alpha note\n\n"
        "Alpha links to [[beta]] and [[gamma|the long one]]. #renewables\n\n## Details\n\nWind farms offshore.\n",
        encoding="utf-8",
    )
    (root / "beta.md").write_text("# Beta\n\nBeta is about sourdough bread and starters.\n", encoding="utf-8")
    (root / "gamma.md").write_text(f"# Gamma\n\n## Tides\n\n{LONG_SECTION}\n", encoding="utf-8")
    return root


def manager_for(engine: Engine, alias: str, dimension: int = 384) -> IndexManager:
    return IndexManager(engine, alias, IndexParameters(dimension=dimension))


def run(path: Path, engine: Engine, alias: str, embedder: CachedEmbedder | None, **options: object) -> IngestReport:
    return ingest(
        path,
        engine=engine,
        manager=manager_for(engine, alias),
        embedder=embedder,
        options=IngestOptions(**{"source": "test-source", **options}),  # type: ignore[arg-type]
    )


def index_state(engine: Engine, alias: str) -> dict[str, str]:
    hits = engine.scan(alias, {"match_all": {}}, ["content_hash"], sort_field="chunk_id")
    return {hit.id: str(hit.source["content_hash"]) for hit in hits}


def chunk_ids_of(engine: Engine, alias: str, doc_id: str) -> list[str]:
    return [hit.id for hit in engine.scan(alias, {"term": {"doc_id": doc_id}}, ["chunk_id"], sort_field="chunk_id")]


def embedder_cache(embedder: CachedEmbedder) -> Path:
    return embedder.cache.path.parent


def ingest_into(
    engine: Engine, index: str, path: Path, source_format: SourceFormat = "auto", **options: object
) -> IngestReport:
    """Ingest ``path`` into ``index`` with the hashing embedder (``options`` as ``IngestOptions`` takes them)."""
    embedder = HashingEmbedder()
    manager = IndexManager(engine, index, IndexParameters(dimension=embedder.dimension))
    return ingest(
        path,
        engine=engine,
        manager=manager,
        embedder=embedder,
        options=IngestOptions(source_format=source_format, **options),  # type: ignore[arg-type]
    )
