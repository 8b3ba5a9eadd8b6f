"""What every engine must do for the model record: keep a ``_meta`` put on an index, leave its fields alone,
and let a reindex carry it; and, through ingest and search, the whole refusal and re-embedding on each engine.
Mixed into the engine contract classes, which provide ``engine`` and ``prefix``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.identity import META_KEY, ModelIdentity, identity_of, recorded_identity
from esbridge.engines import connect_async
from esbridge.engines.base import AsyncEngine, BulkAction, Engine
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.errors import EsbridgeWarning, ModelMismatch
from esbridge.ingest.model_record import record_model
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.transfer import export_chunks, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import SCHEMA_VERSION, IndexParameters
from esbridge.query.factory import build_searcher
from esbridge.query.models import SearchRequest, SearchResponse
from tests.contract.records import PARAMS
from tests.support.hashing import RECORDS, HashingEmbedder, OtherHashingEmbedder

RECORDED = ModelIdentity(name="contract/model", weights="f" * 64, dimension=4, pooling="mean", normalize=True)


class ModelRecordContract:
    def test_put_meta_replaces_meta_and_leaves_the_fields_alone(self, engine: Engine, prefix: str) -> None:
        manager = IndexManager(engine, prefix, PARAMS)
        name = manager.create()
        record_model(engine, prefix, RECORDED)
        mapping = engine.get_mapping(prefix)
        assert mapping["_meta"] == {"esbridge_schema": SCHEMA_VERSION, META_KEY: RECORDED.to_meta()}
        assert recorded_identity(mapping, prefix) == RECORDED
        assert manager.diff().changes == ()
        engine.put_meta(name, {"esbridge_schema": SCHEMA_VERSION})
        assert engine.get_mapping(name)["_meta"] == {"esbridge_schema": SCHEMA_VERSION}

    def test_a_reindex_carries_the_record_to_the_new_version(self, engine: Engine, prefix: str) -> None:
        manager = IndexManager(engine, prefix, PARAMS)
        manager.create()
        record_model(engine, prefix, RECORDED)
        outcome = manager.reindex(delete_old=True)
        assert engine.alias_targets(prefix) == [outcome.new]
        assert recorded_identity(engine.get_mapping(prefix), prefix) == RECORDED

    def test_model_a_refuses_model_b_until_b_has_re_embedded_the_index(
        self, engine: Engine, prefix: str, tmp_path: Path
    ) -> None:
        first, other = HashingEmbedder(), OtherHashingEmbedder()
        assert ingest_with(engine, prefix, first, tmp_path).model_recorded == first.name
        with pytest.raises(ModelMismatch) as refused:
            search_with(engine, prefix, other)
        assert f"made by {first.name} (" in str(refused.value)
        assert f"with {other.name} (" in str(refused.value)
        forced = search_with(engine, prefix, other, allow=True)
        assert any(f"made by {first.name}, the query was embedded by {other.name}" in w for w in forced.warnings)
        again = ingest_with(engine, prefix, other, tmp_path)
        assert (again.unchanged, again.embedded, again.failed) == (0, len(RECORDS), [])
        assert recorded_identity(engine.get_mapping(prefix), prefix) == identity_of(other)
        assert search_with(engine, prefix, other).warnings == []
        with pytest.raises(ModelMismatch):
            search_with(engine, prefix, first)

    def test_a_re_embedding_refused_by_a_write_block_keeps_the_old_record_and_converges_when_run_again(
        self, engine: Engine, prefix: str, tmp_path: Path
    ) -> None:
        first, other = HashingEmbedder(), OtherHashingEmbedder()
        ingest_with(engine, prefix, first, tmp_path)
        (current,) = engine.alias_targets(prefix)
        engine.set_write_block(current, True)
        try:
            refused = ingest_with(engine, prefix, other, tmp_path)
        finally:
            engine.set_write_block(current, False)
        assert len(refused.failed) == len(RECORDS)
        assert refused.model_recorded is None
        assert recorded_identity(engine.get_mapping(prefix), prefix) == identity_of(first)
        done = ingest_with(engine, prefix, other, tmp_path)
        assert (done.failed, done.unchanged, done.model_recorded) == ([], 0, other.name)
        assert recorded_identity(engine.get_mapping(prefix), prefix) == identity_of(other)

    def test_a_re_embedding_leaves_chunks_with_nothing_to_embed_without_a_vector(
        self, engine: Engine, prefix: str, tmp_path: Path
    ) -> None:
        # Chunks of another source written with a vector before such chunks were left without one: a blank one, and
        # one whose text the models see nothing in (no word: a zero vector, which every engine refuses).
        first, other = HashingEmbedder(), OtherHashingEmbedder()
        ingest_with(engine, prefix, first, tmp_path)
        old_vector = [1.0] + [0.0] * (first.dimension - 1)
        older = {
            f"{name}#0": {"doc_id": name, "chunk_id": f"{name}#0", "chunk_index": 0, "source": "older", "title": "",
                          "body": body, "headings": [], "embedding": "ok", "vector": old_vector}
            for name, body in (("blank", " \u200b "), ("dashes", "-- !!! --"))
        }  # fmt: skip
        assert engine.bulk(prefix, [BulkAction("index", id, doc) for id, doc in older.items()]).failed == []
        engine.refresh(prefix)

        report = ingest_with(engine, prefix, other, tmp_path)
        assert (report.failed, report.model_recorded, report.embedded) == ([], other.name, len(RECORDS))
        assert any("1 chunk(s) hold text in which other-hashing-32 sees nothing" in w for w in report.warnings)
        stored = engine.search(prefix, {"size": 5, "query": {"term": {"source": "older"}}}).hits
        assert {hit.id: (hit.source["embedding"], hit.source.get("vector")) for hit in stored} == {
            "blank#0": ("none", None),
            "dashes#0": ("none", None),
        }
        with_vector = engine.search(
            prefix, {"size": 0, "track_total_hits": True, "query": {"exists": {"field": "vector"}}}
        )
        assert with_vector.total == len(RECORDS)
        again = ingest_with(engine, prefix, other, tmp_path)
        assert (again.failed, again.unchanged, again.embedded) == ([], len(RECORDS), 0)

    def test_an_import_that_writes_no_vector_records_no_model(
        self, engine: Engine, prefix: str, tmp_path: Path
    ) -> None:
        # As after an empty ingest: the header's model made none of the index's vectors, so the index is left free
        # to take any model's, until an import writes one of the export's vectors.
        header = {
            "format": "esbridge-export",
            "version": 1,
            "parameters": {"dimension": 4},
            "model": RECORDED.to_meta(),
        }
        chunk = {"_id": "a#0", "doc_id": "a", "chunk_id": "a#0", "title": "Moved"}
        exports: dict[str, list[dict[str, Any]]] = {
            "empty": [{**header, "chunks": 0}],
            "without vectors": [{**header, "chunks": 1}, chunk],
            "with a vector": [{**header, "chunks": 1}, {**chunk, "vector": [0.5, 0.5, 0.5, 0.5]}],
        }
        recorded = {}
        for name, lines in exports.items():
            path = tmp_path / f"{name}.jsonl"
            path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            assert import_chunks(engine, prefix, path) == (len(lines) - 1, [])
            recorded[name] = recorded_identity(engine.get_mapping(prefix), prefix)
        assert engine.alias_targets(prefix) == [f"{prefix}-v1"]
        assert recorded == {"empty": None, "without vectors": None, "with a vector": RECORDED}

    def test_an_import_into_an_index_recording_no_model_is_checked_against_its_vectors(
        self, engine: Engine, prefix: str, tmp_path: Path
    ) -> None:
        # An index made before models were recorded: its vectors, not its record, say which model made them.
        first, other = HashingEmbedder(), OtherHashingEmbedder()
        ingest_with(engine, prefix, first, tmp_path)
        (current,) = engine.alias_targets(prefix)
        engine.put_meta(current, {"esbridge_schema": SCHEMA_VERSION})
        exports = {}
        for embedder in (other, first):
            alias = f"{prefix}-{embedder.name}"
            ingest_with(engine, alias, embedder, tmp_path)
            exports[embedder.name] = path = tmp_path / f"{embedder.name}.jsonl"
            with path.open("w", encoding="utf-8") as out:
                export_chunks(engine, IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension)), out)
        with pytest.raises(ModelMismatch) as refused:
            import_chunks(engine, prefix, exports[other.name])
        assert f"index {prefix} records no embedding model" in str(refused.value)
        assert "--index NAME" in str(refused.value)
        assert recorded_identity(engine.get_mapping(prefix), prefix) is None
        elsewhere = tmp_path / "elsewhere.jsonl"  # no chunk the index holds: nothing tells, so nothing is recorded
        header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 32}, "chunks": 1}
        chunk = {"_id": "z#0", "doc_id": "z", "chunk_id": "z#0", "title": "Z", "vector": [1.0] + [0.0] * 31}
        lines = [{**header, "model": identity_of(other).to_meta()}, chunk]
        elsewhere.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        with pytest.warns(EsbridgeWarning, match="records no model"):
            assert import_chunks(engine, prefix, elsewhere) == (1, [])
        assert recorded_identity(engine.get_mapping(prefix), prefix) is None
        assert import_chunks(engine, prefix, exports[first.name]) == (len(RECORDS), [])
        assert recorded_identity(engine.get_mapping(prefix), prefix) == identity_of(first)


def async_twin(engine: Engine) -> AsyncEngine:
    """The query path of the engine ``engine`` talks to."""
    if isinstance(engine, EmbeddedEngine):
        return AsyncEmbeddedEngine(engine=engine)
    return connect_async(load_settings(url=engine.url, engine=engine.dialect, timeout_s=30))


def ingest_with(engine: Engine, alias: str, embedder: HashingEmbedder, folder: Path) -> IngestReport:
    path = folder / "records.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    return ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="t"))


def search_with(engine: Engine, alias: str, embedder: HashingEmbedder, *, allow: bool = False) -> SearchResponse:
    async def run() -> SearchResponse:
        twin = async_twin(engine)
        try:
            searcher = build_searcher(
                twin, alias, embedder, PipelineSettings(), num_candidates=50, probe=engine, allow_model_mismatch=allow
            )
            return await searcher.search(SearchRequest(query="sourdough starter"))
        finally:
            await twin.close()

    return asyncio.run(run())
