"""Ingest throughput per embedding backend, in one run on the same documents (``esbridge bench --modes ingest``).

Each backend (``torch``, ``onnx-fp32``, ``onnx-int8``, of the configured model, or of another model
named after ``@``: ``torch@all-MiniLM-L6-v2``) ingests the same first ``limit`` documents of a BEIR
corpus into its own scratch index, which is dropped afterwards. The model is loaded before the clock
starts and embeds without the on-disk cache, so every chunk is embedded: what is timed is what a first
ingest of new documents costs (chunking, embedding, bulk writes, refresh).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esbridge.config.embedding import EmbeddingSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import close_model
from esbridge.embeddings.factory import load_model
from esbridge.engines import connect
from esbridge.errors import ConfigError, EsbridgeError, IngestInterrupted, SourceError
from esbridge.ingest.beir import CORPUS_FILE
from esbridge.ingest.json_lines import require_file
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import parameters_from

BACKENDS: dict[str, dict[str, str]] = {
    "torch": {"backend": "torch", "precision": "fp32"},
    "onnx-fp32": {"backend": "onnx", "precision": "fp32"},
    "onnx-int8": {"backend": "onnx", "precision": "int8"},
}


@dataclass
class IngestBenchReport:
    documents: int
    engine: str
    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    """backend -> chunks, wall_s, embed_s, index_s, chunks_per_s"""
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ratios(self) -> dict[str, float]:
        """Each backend's chunks/s over the first measured one's."""
        if not self.runs:
            return {}
        first, *others = self.runs
        base = self.runs[first]["chunks_per_s"]
        return {f"{name} / {first}": round(self.runs[name]["chunks_per_s"] / base, 2) for name in others if base}

    def as_json(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "engine": self.engine,
            "runs": self.runs,
            "skipped": self.skipped,
            "ratios": self.ratios,
        }


def known_backend(backend: str) -> bool:
    """Whether ``backend`` is one of ``BACKENDS``, optionally followed by ``@MODEL`` (a model named)."""
    name, at, model = backend.partition("@")
    return name in BACKENDS and (not at or bool(model))


def backend_settings(base: EmbeddingSettings, backend: str) -> EmbeddingSettings:
    """``base`` on ``backend`` (``BACKEND`` or ``BACKEND@MODEL``); a model named after ``@`` gets its own
    profile, not ``base``'s overrides."""
    name, _, model = backend.partition("@")
    if not known_backend(backend):
        raise ConfigError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}, each optionally @MODEL")
    if not model:
        return base.model_copy(update=BACKENDS[name])
    own = {"model": model, "batch_size": base.batch_size, "threads": base.threads, "cache_dir": base.cache_dir}
    return EmbeddingSettings.model_validate({**own, **BACKENDS[name]})


def corpus_slice(dataset: Path, limit: int, into: Path) -> int:
    """The first ``limit`` lines of the dataset's corpus as a BEIR folder in ``into``; how many. A corpus
    without any is refused (``SourceError``): there would be nothing to time."""
    corpus = dataset / CORPUS_FILE
    require_file(corpus, "BEIR corpus")
    count = 0
    with corpus.open(encoding="utf-8") as source, (into / CORPUS_FILE).open("w") as sink:
        for line in source:
            if count >= limit:
                break
            if line.strip():
                sink.write(line)
                count += 1
    if count == 0:
        raise SourceError(f"{corpus} has no document to ingest")
    return count


def measure_ingest(
    settings: Settings,
    dataset: Path,
    backends: Sequence[str],
    *,
    limit: int,
    progress: Callable[[str], None] = lambda backend: None,
) -> IngestBenchReport:
    """Ingest the corpus slice once per backend; a backend whose model cannot load is skipped with the reason."""
    with tempfile.TemporaryDirectory(prefix="esbridge-ingest-bench-") as scratch:
        documents = corpus_slice(dataset, limit, Path(scratch))
        engine = connect(settings)
        report = IngestBenchReport(documents=documents, engine=engine.url)
        try:
            for backend in backends:
                progress(backend)
                try:
                    model = load_model(backend_settings(settings.embedding, backend))
                except EsbridgeError as exc:
                    report.skipped[backend] = str(exc)
                    continue
                slug = re.sub(r"[^a-z0-9]+", "-", backend.lower()).strip("-")
                alias = f"{settings.index}-ingest-bench-{slug}-{os.getpid()}"
                manager = IndexManager(engine, alias, parameters_from(settings, model.dimension))
                try:
                    started = time.perf_counter()
                    result = ingest(Path(scratch), engine=engine, manager=manager, embedder=model, options=_options())
                    wall = time.perf_counter() - started
                except KeyboardInterrupt as exc:  # ingest's own message says its writes are kept: here they are not
                    raise IngestInterrupted(
                        f"no figures are printed; the scratch index {alias} is dropped, so a new run starts over"
                    ) from exc
                finally:
                    close_model(model)
                    manager.drop()
                if result.failed:
                    report.skipped[backend] = f"{len(result.failed)} chunk(s) failed, e.g. {result.failed[0]}"
                    continue
                report.runs[backend] = {
                    "chunks": result.chunks_indexed,
                    "wall_s": round(wall, 2),
                    "embed_s": round(result.timings["embed_s"], 2),
                    "index_s": round(result.timings["index_s"], 2),
                    "chunks_per_s": round(result.chunks_indexed / wall, 1),
                }
        finally:
            engine.close()
    return report


def _options() -> IngestOptions:
    return IngestOptions(source_format="beir", source="ingest-bench")
