"""An empty index records a model only once a vector of it has landed: an import whose first writes fail (refused,
the engine gone) leaves no record, so the still empty index takes another
model next instead of refusing it in the name of vectors it does not hold."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.identity import identity_of, recorded_identity
from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult
from esbridge.engines.bulk import RetryPolicy
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineUnavailable
from esbridge.ingest import export_file
from esbridge.ingest.transfer import import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder

HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": HashingEmbedder.dimension}}


def export_of(path: Path, embedder: HashingEmbedder, extra: int = 0) -> Path:
    """An export of two chunks (after ``extra`` others) whose vectors and header model are ``embedder``'s."""
    texts = {f"n{n}": f"note number {n}" for n in range(extra)}
    texts |= {"solar": "Photovoltaic cells turn sunlight into electricity.", "wind": "Offshore wind farms make power."}
    vectors = embedder.embed(list(texts.values()))
    header = {**HEADER, "chunks": len(texts), "model": identity_of(embedder).to_meta()}
    lines = [
        {"_id": f"{doc}#0", "chunk_id": f"{doc}#0", "doc_id": doc, "body": text, "embedding": "ok", "vector": vector}
        for (doc, text), vector in zip(texts.items(), vectors, strict=True)
    ]
    path.write_text("\n".join(json.dumps(line) for line in [header, *lines]) + "\n", encoding="utf-8")
    return path


def refused(self: EmbeddedEngine, index: str, actions: Sequence[BulkAction]) -> BulkResult:
    return BulkResult(
        succeeded=[], failed=[BulkItemFailure(a.id, 400, "mapper_parsing_exception: no") for a in actions]
    )


def gone(self: EmbeddedEngine, index: str, actions: Sequence[BulkAction]) -> BulkResult:
    raise EngineUnavailable("connection refused", url="embedded:test", operation="bulk")


@pytest.mark.parametrize("first_write", [refused, gone], ids=["refused", "engine-gone"])
def test_an_import_whose_first_writes_fail_records_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_write: object
) -> None:
    data = tmp_path / "data"
    engine = EmbeddedEngine(data)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(EmbeddedEngine, "bulk", first_write)
            try:
                imported, failed = import_chunks(
                    engine, "notes", export_of(tmp_path / "a.jsonl", HashingEmbedder()), retry=RetryPolicy(attempts=1)
                )
                assert (imported, len(failed)) == (0, 2)
            except EngineUnavailable:
                pass
        assert engine.count("notes") == 0
        assert recorded_identity(engine.get_mapping("notes"), "notes") is None, "no vector landed, so no record"
    finally:
        engine.close()

    other = export_of(tmp_path / "b.jsonl", OtherHashingEmbedder())
    result = CliRunner().invoke(main, ["import", str(other), "--index", "notes"], env={"ESBRIDGE_DATA_DIR": str(data)})

    assert result.exit_code == 0, result.output
    engine = EmbeddedEngine(data)
    try:
        recorded = recorded_identity(engine.get_mapping("notes"), "notes")
        assert recorded is not None and recorded.name == "other-hashing-32"
        assert engine.count("notes") == 2
    finally:
        engine.close()


def test_an_import_checking_an_unrecorded_index_by_its_vectors_reads_the_export_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An index esbridge made before records: its vectors, compared with the export's, say which model made them.
    embedder = HashingEmbedder()
    source = export_of(tmp_path / "export.jsonl", embedder, extra=1500)
    chunks = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()[1:]]
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension)).create()
        # Three chunks the agreement finds only in its second batch of the export's chunks.
        stored = [{key: value for key, value in chunk.items() if key != "_id"} for chunk in chunks[150:153]]
        held = [BulkAction("index", chunk["chunk_id"], chunk) for chunk in stored]
        assert not engine.bulk("notes", held).failed
        engine.refresh("notes")
        opened: list[Path] = []
        open_export = export_file._open_export

        def counted(path: Path) -> Any:
            opened.append(path)
            return open_export(path)

        monkeypatch.setattr(export_file, "_open_export", counted)

        assert import_chunks(engine, "notes", source) == (len(chunks), [])

        assert opened == [source]
        recorded = recorded_identity(engine.get_mapping("notes"), "notes")
        assert recorded is not None and recorded.name == embedder.name, "the vectors agreed, so the model is recorded"
        engine.refresh("notes")
        assert engine.count("notes") == len(chunks), "the chunks the check read first were written too"
    finally:
        engine.close()
