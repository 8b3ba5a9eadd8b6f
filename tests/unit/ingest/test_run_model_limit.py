"""Chunks are cut by an estimate that does not depend on the model, so a model that reads fewer tokens than a
chunk holds embeds only its beginning: the ingest says how many chunks that was, never silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import passages_cut
from esbridge.embeddings.onnx_runtime import OnnxEmbedder
from esbridge.embeddings.profiles import BGE_SMALL, E5_SMALL
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.support.models import require_stored

LONG = " ".join(f"word{i}" for i in range(40))


class ShortReader(HashingEmbedder):
    """Reads 12 tokens (a word each), as a model with a short window would."""

    max_tokens = 12


def run(engine: EmbeddedEngine, tmp_path: Path, embedder: HashingEmbedder, texts: dict[str, str]) -> IngestReport:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"id": k, "title": "", "text": v}) + "\n" for k, v in texts.items()), "utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension))
    return ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions())


def test_chunks_longer_than_the_model_reads_are_counted_and_named_in_a_warning(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    report = run(engine, tmp_path, ShortReader(), {"long": LONG, "short": "solar panels on the roof"})
    assert (report.chunks_indexed, report.embedded, report.cut_by_model) == (2, 2, 1)
    assert report.warnings == [
        "1 of 2 chunk(s) embedded hold more than the 12 tokens hashing-32 reads: their vectors stand for their "
        "beginnings only (BM25 searches their whole text); a model or an [embedding] max_tokens that reads more "
        "embeds them whole"
    ]
    found = engine.search("notes", {"query": {"match": {"body": "word39"}}}).hits
    assert [hit.source["doc_id"] for hit in found] == ["long"]  # the words past the model's window, found by BM25


def test_no_warning_when_every_chunk_fits(engine: EmbeddedEngine, tmp_path: Path) -> None:
    report = run(engine, tmp_path, HashingEmbedder(), {"long": LONG, "short": "solar panels"})
    assert (report.embedded, report.cut_by_model, report.warnings) == (2, 0, [])


@pytest.mark.parametrize("name", [BGE_SMALL, E5_SMALL])
def test_a_real_model_counts_its_own_tokens_and_passage_prompt(name: str) -> None:
    require_stored(name, "int8")
    model = OnnxEmbedder.from_settings(EmbeddingSettings(model=name, backend="onnx", precision="int8", max_tokens=32))
    try:
        fits = "Solar panels turn sunlight into electricity."
        assert model.max_tokens == 32 and model.count_tokens(fits) < 20
        assert passages_cut(model, [LONG, fits, LONG]) == 2
        # e5 reads "passage: " before each text: a text just under the limit alone is over it with the prompt.
        edge = " ".join(["sun"] * 30)
        assert model.count_tokens(edge) == 32
        assert passages_cut(model, [edge]) == (1 if name == E5_SMALL else 0)
    finally:
        model.close()
