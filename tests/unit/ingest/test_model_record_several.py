"""Ingest, import and ``embed --missing`` into an alias over several indices are refused before anything is written,
naming each index and the way out (``esbridge index record-model`` records one model behind such a name): their
writes reach one index and their record would be claimed for all. On the embedded engine; data streams, which it
lacks, in tests/integration/test_record_model_streams_writes.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge import errors
from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.embeddings.identity import identity_of, recorded_identity
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.documents import AWAITING_VECTOR
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.record_by_hand import record_by_hand
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.transfer import export_to_file, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import RECORDS, HashingEmbedder

BOTH = "alias 'notes' points to several indices (notes-v1, notes-v2): "


def _alias_over_two(engine: EmbeddedEngine, tmp_path: Path) -> tuple[IndexManager, Path, Path]:
    """notes-v1 ingested with a model (and recording it), notes-v2 added behind the alias: empty, recording none."""
    source = tmp_path / "a.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=32))
    ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="a"))
    exported = tmp_path / "notes.jsonl"
    export_to_file(engine, manager, exported)
    engine.create_index("notes-v2", manager.wanted_body())
    engine.update_aliases([{"add": {"index": "notes-v2", "alias": "notes"}}])
    return manager, source, exported


def _unchanged(engine: EmbeddedEngine, counts: dict[str, int]) -> None:
    assert {index: engine.count(index) for index in ("notes-v1", "notes-v2")} == counts
    assert recorded_identity(engine.get_mapping("notes-v2"), "notes-v2") is None


def test_embed_missing_is_refused_naming_each_index_and_the_way_out(engine: EmbeddedEngine, tmp_path: Path) -> None:
    _alias_over_two(engine, tmp_path)
    engine.bulk("notes-v2", [BulkAction("index", "x#0", {"chunk_id": "x#0", "embedding": AWAITING_VECTOR})])
    engine.refresh("notes-v2")
    counts = {index: engine.count(index) for index in ("notes-v1", "notes-v2")}
    # Before: "read mapping failed ...: alias [notes] points to 2 indices; the embedded engine reads one at a time".
    with pytest.raises(errors.AmbiguousAlias) as refused:
        embed_missing(engine, "notes", HashingEmbedder())
    message = str(refused.value)
    assert message.startswith(BOTH + "embed --missing would write into its write index alone")
    assert "nothing was written. Point the alias at one index (POST _aliases) and run again" in message
    assert message.endswith(
        "`esbridge index record-model --index notes` records a model in every index behind notes, checking each first"
    )
    _unchanged(engine, counts)


def test_the_way_out_records_the_model_behind_the_alias(engine: EmbeddedEngine, tmp_path: Path) -> None:
    _alias_over_two(engine, tmp_path)
    model = identity_of(HashingEmbedder())
    record_by_hand(engine, "notes", model, "vector", in_template=False, confirm=lambda question: None)
    assert {index: recorded_identity(held, index) for index, held in engine.get_mappings("notes").items()} == {
        "notes-v1": model,
        "notes-v2": model,
    }
    engine.update_aliases([{"remove": {"index": "notes-v1", "alias": "notes"}}])
    assert embed_missing(engine, "notes", HashingEmbedder()).failed == []


def test_ingest_is_refused_before_writing(engine: EmbeddedEngine, tmp_path: Path) -> None:
    manager, source, _ = _alias_over_two(engine, tmp_path)
    counts = {index: engine.count(index) for index in ("notes-v1", "notes-v2")}
    # Before: "alias 'notes' points to several indices ['notes-v1', 'notes-v2']; fix it by hand".
    with pytest.raises(errors.AmbiguousAlias) as refused:
        ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="b"))
    assert str(refused.value).startswith(BOTH + "ingest would write into its write index alone")
    assert "Point the alias at one index (POST _aliases) and run again" in str(refused.value)
    _unchanged(engine, counts)


def test_import_is_refused_before_writing(engine: EmbeddedEngine, tmp_path: Path) -> None:
    _, _, exported = _alias_over_two(engine, tmp_path)
    counts = {index: engine.count(index) for index in ("notes-v1", "notes-v2")}
    # Before: "read mapping failed ...: alias [notes] points to 2 indices; the embedded engine reads one at a time".
    with pytest.raises(errors.AmbiguousAlias) as refused:
        import_chunks(engine, "notes", exported)
    assert str(refused.value).startswith(BOTH + "import would write into its write index alone")
    _unchanged(engine, counts)


def test_one_index_behind_the_alias_is_written_as_before(engine: EmbeddedEngine, tmp_path: Path) -> None:
    _, _, exported = _alias_over_two(engine, tmp_path)
    engine.update_aliases([{"remove": {"index": "notes-v2", "alias": "notes"}}])
    imported, failed = import_chunks(engine, "notes", exported)
    assert (imported, failed) == (engine.count("notes-v1"), [])
    assert embed_missing(engine, "notes", HashingEmbedder()).failed == []


def test_the_embed_command_refuses_with_the_same_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        _alias_over_two(engine, tmp_path)
    finally:
        engine.close()
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    env = {"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_DATA_DIR": str(tmp_path / "data")}
    refused = CliRunner(env=env).invoke(main, ["embed", "--missing", "--index", "notes"])
    # Before: "alias 'notes' points to several indices ['notes-v1', 'notes-v2']; fix it by hand".
    assert refused.exit_code == 1
    assert BOTH + "embed --missing would write into its write index alone" in " ".join(refused.output.split())
