"""Ingest keeps the index's model record true: recorded in a new index, every chunk re-embedded (and only then
recorded) when another model of the same dimension ingests, a half-finished run converges, an index that
predates records is recorded or re-embedded by what its vectors say. On the embedded engine, with two small
deterministic models."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from esbridge.embeddings.identity import identity_of, recorded_identity
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EsbridgeWarning, ModelMismatch
from esbridge.ingest.documents import EMBEDDED
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.transfer import export_to_file, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import RECORDS, HashingEmbedder, OtherHashingEmbedder

FIRST, SECOND = RECORDS[:3], RECORDS[3:]


def run(
    engine: EmbeddedEngine, folder: Path, source: str, records: Sequence[Mapping[str, Any]], embedder: HashingEmbedder
) -> IngestReport:
    path = folder / f"{source}.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension))
    return ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source=source))


def recorded_name(engine: EmbeddedEngine) -> str | None:
    recorded = recorded_identity(engine.get_mapping("notes"), "notes")
    return recorded.name if recorded is not None else None


def vectors(engine: EmbeddedEngine) -> dict[str, list[float]]:
    hits = engine.scan("notes", {"match_all": {}}, ["vector"], sort_field="chunk_id")
    return {hit.id: list(hit.source["vector"]) for hit in hits}


def test_a_new_index_records_the_model_of_its_first_ingest(engine: EmbeddedEngine, tmp_path: Path) -> None:
    report = run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    assert report.model_recorded == "hashing-32"
    assert recorded_identity(engine.get_mapping("notes"), "notes") == identity_of(HashingEmbedder())
    again = run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    assert (again.unchanged, again.embedded, again.model_recorded) == (len(FIRST), 0, None)


def test_an_ingest_that_writes_no_vector_records_no_model(engine: EmbeddedEngine, tmp_path: Path) -> None:
    # Nothing in the index was made by the model; recording it would hold the next run and every search to it.
    blank = run(engine, tmp_path, "blank", [{"id": "blank", "title": "", "text": "!!!"}], HashingEmbedder())
    assert (blank.chunks_indexed, blank.embedded, blank.model_recorded, recorded_name(engine)) == (1, 0, None, None)

    other = run(engine, tmp_path, "first", FIRST, OtherHashingEmbedder())
    assert other.warnings == [], "no chunk is re-embedded: there was none"
    assert (other.embedded, other.model_recorded, recorded_name(engine)) == (3, "other-hashing-32", "other-hashing-32")


def test_another_model_of_the_same_dimension_re_embeds_every_chunk_of_every_source(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    run(engine, tmp_path, "second", SECOND, HashingEmbedder())
    before = vectors(engine)
    other = OtherHashingEmbedder()
    report = run(engine, tmp_path, "first", FIRST, other)
    assert report.unchanged == 0
    assert report.embedded == len(RECORDS)  # the first source by its writes, the second from the stored text
    assert report.failed == []
    assert report.model_recorded == "other-hashing-32"
    assert any("made by hashing-32, not other-hashing-32" in warning for warning in report.warnings)
    assert recorded_name(engine) == "other-hashing-32"
    after = vectors(engine)
    assert after.keys() == before.keys()
    assert all(after[chunk] == list(reversed(before[chunk])) for chunk in after)  # every vector is the new model's
    settled = run(engine, tmp_path, "first", FIRST, other)
    assert (settled.unchanged, settled.embedded) == (len(FIRST), 0)


def test_a_re_embedding_run_that_failed_half_way_keeps_the_old_record_and_converges_when_run_again(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    current = IndexManager(engine, "notes", IndexParameters(dimension=32)).current()
    engine.set_write_block(current, True)
    failed = run(engine, tmp_path, "first", FIRST, OtherHashingEmbedder())
    assert len(failed.failed) == len(FIRST)
    assert failed.model_recorded is None
    assert recorded_name(engine) == "hashing-32"  # no claim for vectors that were not written
    engine.set_write_block(current, False)
    done = run(engine, tmp_path, "first", FIRST, OtherHashingEmbedder())
    assert (done.failed, done.unchanged, done.model_recorded) == ([], 0, "other-hashing-32")
    assert recorded_name(engine) == "other-hashing-32"


def unrecorded_index_with_one_vector(engine: EmbeddedEngine, made_by: HashingEmbedder) -> None:
    """An index as esbridge made it before model records: one chunk with a vector, no record."""
    IndexManager(engine, "notes", IndexParameters(dimension=32)).create()
    vector = made_by.embed(["old"])[0]
    old = {"doc_id": "old", "chunk_id": "old#0", "source": "legacy", "body": "old", "vector": vector}
    engine.bulk("notes", [BulkAction("index", "old#0", {**old, "embedding": EMBEDDED})])
    engine.refresh("notes")


def test_an_unrecorded_index_whose_vectors_the_model_made_gets_the_record_without_re_embedding(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    unrecorded_index_with_one_vector(engine, HashingEmbedder())
    report = run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    assert (report.embedded, report.model_recorded, report.warnings) == (len(FIRST), "hashing-32", [])
    assert recorded_name(engine) == "hashing-32"
    assert vectors(engine)["old#0"] == HashingEmbedder().embed(["old"])[0]


def test_an_unrecorded_index_whose_vectors_another_model_made_is_re_embedded_and_recorded(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    unrecorded_index_with_one_vector(engine, OtherHashingEmbedder())
    report = run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    assert report.model_recorded == "hashing-32"
    assert report.embedded == len(FIRST) + 1  # the run's chunks and the stored one
    assert any("records no model, and its 1 vector(s) were not made by hashing-32" in w for w in report.warnings)
    assert vectors(engine)["old#0"] == HashingEmbedder().embed(["old"])[0]


def test_embed_missing_with_another_model_is_refused_naming_both(engine: EmbeddedEngine, tmp_path: Path) -> None:
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    with pytest.raises(ModelMismatch, match=r"made by hashing-32 .* with other-hashing-32"):
        embed_missing(engine, "notes", OtherHashingEmbedder())


def lexical_only(engine: EmbeddedEngine, folder: Path) -> IngestReport:
    """An ingest while the model was unavailable: chunks without vectors, awaiting `embed --missing`."""
    path = folder / "first.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in FIRST), encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=32))
    return ingest(path, engine=engine, manager=manager, embedder=None, options=IngestOptions(source="first"))


def test_embed_missing_records_the_model_that_made_the_vectors(engine: EmbeddedEngine, tmp_path: Path) -> None:
    assert lexical_only(engine, tmp_path).without_vectors == len(FIRST)
    assert recorded_name(engine) is None
    filled = embed_missing(engine, "notes", HashingEmbedder())
    assert (filled.chunks_indexed, filled.failed, filled.model_recorded) == (len(FIRST), [], "hashing-32")
    assert recorded_identity(engine.get_mapping("notes"), "notes") == identity_of(HashingEmbedder())
    with pytest.raises(ModelMismatch, match=r"made by hashing-32 .* with other-hashing-32"):
        embed_missing(engine, "notes", OtherHashingEmbedder())  # the record is what later checks read


def test_embed_missing_refuses_an_unrecorded_index_whose_vectors_another_model_made(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    unrecorded_index_with_one_vector(engine, OtherHashingEmbedder())
    lexical_only(engine, tmp_path)
    with pytest.raises(ModelMismatch, match="records no embedding model, and its vectors were not made by hashing-32"):
        embed_missing(engine, "notes", HashingEmbedder())
    assert recorded_name(engine) is None
    with_vectors = engine.scan("notes", {"term": {"embedding": EMBEDDED}}, ["chunk_id"], sort_field="chunk_id")
    assert [hit.id for hit in with_vectors] == ["old#0"]


def test_a_reindex_and_an_export_carry_the_record(engine: EmbeddedEngine, tmp_path: Path) -> None:
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    manager = IndexManager(engine, "notes", IndexParameters(dimension=32))
    assert manager.reindex(delete_old=True).new == "notes-v2"
    assert recorded_name(engine) == "hashing-32"
    export = tmp_path / "notes.jsonl"
    export_to_file(engine, manager, export)
    imported, failed = import_chunks(engine, "copy", export)
    assert (imported, failed) == (len(FIRST), [])
    assert recorded_identity(engine.get_mapping("copy"), "copy") == identity_of(HashingEmbedder())


class StopsAfterFirstWrite:
    """The embedded engine, except that the run is stopped (Ctrl-C) at its second bulk write."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        self._engine = engine
        self.bulks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def bulk(self, index: str, actions: Sequence[BulkAction], **kwargs: Any) -> Any:
        self.bulks += 1
        if self.bulks > 1:
            raise KeyboardInterrupt
        return self._engine.bulk(index, actions, **kwargs)


def stop_a_re_embedding(engine: EmbeddedEngine, tmp_path: Path) -> None:
    """Index both sources with one model, then stop a run with another after it rewrote the first source's chunks
    (their hashes unchanged) and before the second's."""
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    run(engine, tmp_path, "second", SECOND, HashingEmbedder())
    manager = IndexManager(engine, "notes", IndexParameters(dimension=32))
    stopping = cast(Engine, StopsAfterFirstWrite(engine))
    with pytest.raises(KeyboardInterrupt):  # the first source's chunks got the other model's vectors, not the rest
        ingest(
            tmp_path / "first.jsonl",
            engine=stopping,
            manager=manager,
            embedder=OtherHashingEmbedder(),
            options=IngestOptions(source="first"),
        )
    assert recorded_name(engine) == "hashing-32"


@pytest.mark.parametrize("then", [HashingEmbedder, OtherHashingEmbedder])
@pytest.mark.parametrize("reindexed", [False, True])
def test_a_re_embedding_that_stopped_half_way_converges_with_either_model(
    engine: EmbeddedEngine, tmp_path: Path, then: type[HashingEmbedder], reindexed: bool
) -> None:
    stop_a_re_embedding(engine, tmp_path)
    if reindexed:  # the new version carries the mark with the record
        IndexManager(engine, "notes", IndexParameters(dimension=32)).reindex()
    model = then()
    report = run(engine, tmp_path, "first", FIRST, model)  # the hashes are unchanged
    assert (report.failed, report.embedded, report.model_recorded) == ([], len(RECORDS), model.name)
    assert recorded_name(engine) == model.name

    reference = EmbeddedEngine(tmp_path / "reference")
    try:
        run(reference, tmp_path, "first", FIRST, model)
        run(reference, tmp_path, "second", SECOND, model)
        assert vectors(engine) == vectors(reference), "every vector is the run's model's"
    finally:
        reference.close()
    settled = run(engine, tmp_path, "first", FIRST, model)
    assert (settled.unchanged, settled.embedded) == (len(FIRST), 0), "the mark went with the record"


def test_an_export_of_an_unfinished_re_embedding_warns_that_the_header_is_not_every_vectors_model(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    stop_a_re_embedding(engine, tmp_path)
    manager = IndexManager(engine, "notes", IndexParameters(dimension=32))
    with pytest.warns(
        EsbridgeWarning, match="notes-v1 was being re-embedded with other-hashing-32 by an ingest that did"
    ):
        export_to_file(engine, manager, tmp_path / "notes.jsonl")
    run(engine, tmp_path, "first", FIRST, HashingEmbedder())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        export_to_file(engine, manager, tmp_path / "notes.jsonl")
