"""Export/import round trip embedded -> cluster -> embedded: every chunk kept, same search results."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect
from esbridge.engines.bulk import RetryPolicy
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.errors import DimensionMismatch, EngineUnavailable, ModelMismatch
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.transfer import export_chunks, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.ingest_runs import write_vault
from tests.support.loopback import ForwardingProxy, GoesAwayAfter

QUERIES = ["baking bread at home", "tidal turbines in estuaries", "wind farms"]


def stored(engine: Engine, alias: str) -> dict[str, dict[str, Any]]:
    fields = ["content_hash", "links", "link_weights", "vector", "tags"]
    hits = engine.scan(alias, {"match_all": {}}, fields, sort_field="chunk_id")
    return {hit.id: dict(hit.source) for hit in hits}


def top_ids(data_dir: Path, alias: str, embedder: CachedEmbedder) -> list[list[str]]:
    async def run() -> list[list[str]]:
        engine = AsyncEmbeddedEngine(data_dir)
        searcher = HybridSearcher(engine, alias, embedder)
        answers = [await searcher.search(SearchRequest(query=query, top_n=5)) for query in QUERIES]
        await engine.close()
        return [[hit.id for hit in answer.results] for answer in answers]

    return asyncio.run(run())


def export_to(engine: Engine, alias: str, dimension: int, path: Path) -> int:
    with path.open("w", encoding="utf-8") as out:
        return export_chunks(engine, IndexManager(engine, alias, IndexParameters(dimension=dimension)), out)


def test_round_trip_through_a_cluster_keeps_everything(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    first_dir, last_dir = tmp_path / "embedded-a", tmp_path / "embedded-b"
    first = EmbeddedEngine(first_dir)
    manager = IndexManager(first, "notes", IndexParameters(dimension=embedder.dimension))
    vault = write_vault(tmp_path / "vault")
    report = ingest(vault, engine=first, manager=manager, embedder=embedder, options=IngestOptions(source="vault"))
    assert report.failed == []
    records = tmp_path / "cited.jsonl"
    records.write_text(
        '{"id": "p1", "text": "Citation analysis", "links": [{"id": "p2", "weight": 7}]}\n'
        '{"id": "p2", "text": "Co-citation maps", "links": ["p1"], "link_weights": {"p1": 7}}\n',
        encoding="utf-8",
    )
    cited = ingest(records, engine=first, manager=manager, embedder=embedder, options=IngestOptions(source="cited"))
    assert cited.failed == []
    original = stored(first, "notes")
    assert original["p1#0"]["link_weights"] == {"p2": 7.0}

    exported = export_to(first, "notes", embedder.dimension, tmp_path / "a.jsonl")
    assert exported == len(original)
    imported, failed = import_chunks(engine, alias, tmp_path / "a.jsonl")
    assert (imported, failed) == (len(original), [])
    on_cluster = stored(engine, alias)

    export_to(engine, alias, embedder.dimension, tmp_path / "b.jsonl")
    last = EmbeddedEngine(last_dir)
    assert import_chunks(last, "notes", tmp_path / "b.jsonl") == (len(original), [])
    final = stored(last, "notes")

    for copy in (on_cluster, final):
        assert set(copy) == set(original)
        for chunk_id, fields in original.items():
            assert copy[chunk_id]["content_hash"] == fields["content_hash"]
            assert copy[chunk_id]["links"] == fields["links"]
            assert copy[chunk_id].get("link_weights") == fields.get("link_weights")
            assert copy[chunk_id]["vector"] == pytest.approx(fields["vector"], abs=1e-6)
    first.close()
    last.close()
    assert top_ids(last_dir, "notes", embedder) == top_ids(first_dir, "notes", embedder)

    reopened = EmbeddedEngine(last_dir)
    params = IndexParameters(dimension=embedder.dimension)
    again = ingest(
        vault, engine=reopened, manager=IndexManager(reopened, "notes", params), embedder=embedder,
        options=IngestOptions(source="vault"),
    )  # fmt: skip
    reopened.close()
    assert (again.chunks_indexed, again.embedded) == (0, 0), "imported chunks count as unchanged"


def test_import_reports_bad_lines_and_loads_the_rest(engine: Engine, alias: str, tmp_path: Path) -> None:
    header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 3}
    good = {"_id": "a#0", "chunk_id": "a#0", "doc_id": "a", "title": "A", "body": "alpha", "vector": [1.0, 0.0, 0.0]}
    wrong_size = {**good, "_id": "b#0", "chunk_id": "b#0", "vector": [1.0, 0.0]}
    lines = [json.dumps(header), json.dumps(good), "{broken", json.dumps(wrong_size)]
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import", str(path), "--json", "--url", _url(engine), "--index", alias])
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["chunks_imported"] == 1
    assert sorted(failure["id"] for failure in summary["failed"]) == ["b#0", "export.jsonl:3"]
    not_an_export = tmp_path / "other.jsonl"
    not_an_export.write_text('{"id": 1}\n', encoding="utf-8")
    refused = CliRunner().invoke(main, ["import", str(not_an_export), "--url", _url(engine), "--index", alias])
    assert refused.exit_code == 1
    assert "is not an esbridge export" in refused.output


def _url(engine: Engine) -> str:
    return engine.url


def test_export_replaces_its_output_only_when_it_succeeds(tmp_path: Path) -> None:
    out = tmp_path / "out" / "x.jsonl"
    out.parent.mkdir()
    out.write_text("an earlier export\n", encoding="utf-8")
    env = {"ESBRIDGE_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()

    failed = runner.invoke(main, ["export", "--index", "typo", "-o", str(out)], env=env)
    assert failed.exit_code == 1
    assert "Traceback" not in failed.output
    assert out.read_text(encoding="utf-8") == "an earlier export\n", "a failed export leaves the old file alone"
    assert sorted(path.name for path in out.parent.iterdir()) == ["x.jsonl"], "no temporary file is left"

    engine = EmbeddedEngine(tmp_path / "data")
    IndexManager(engine, "notes", IndexParameters(dimension=3)).create()
    engine.close()
    exported = runner.invoke(main, ["export", "--index", "notes", "-o", str(out)], env=env)
    assert exported.exit_code == 0, exported.output
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert (header["format"], header["chunks"]) == ("esbridge-export", 0)
    assert sorted(path.name for path in out.parent.iterdir()) == ["x.jsonl"]


def test_import_of_a_line_that_is_not_utf8_loads_every_other_line(tmp_path: Path) -> None:
    header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 3}
    chunks = [{"_id": f"{n}#0", "chunk_id": f"{n}#0", "doc_id": n, "title": n, "body": n} for n in ("a", "c")]
    lines = [json.dumps(header).encode(), json.dumps(chunks[0]).encode(), b'{"_id": "b#0", "body": "\xff"}']
    path = tmp_path / "export.jsonl"
    path.write_bytes(b"\n".join([*lines, json.dumps(chunks[1]).encode()]) + b"\n")
    env = {"ESBRIDGE_DATA_DIR": str(tmp_path / "data")}

    result = CliRunner().invoke(main, ["import", str(path), "--json", "--index", "notes"], env=env)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    summary = json.loads(result.stdout)
    assert summary["chunks_imported"] == 2
    assert [failure["id"] for failure in summary["failed"]] == ["export.jsonl:3"]
    engine = EmbeddedEngine(tmp_path / "data")
    assert sorted(stored(engine, "notes")) == ["a#0", "c#0"]
    engine.close()


def test_an_export_carries_the_parameters_the_index_was_built_with(engine: Engine, alias: str, tmp_path: Path) -> None:
    built = IndexParameters(dimension=4, hnsw_m=32, bm25_k1=1.5, bm25_b=0.75)
    header = {"format": "esbridge-export", "version": 1, "parameters": dataclasses.asdict(built), "chunks": 2}
    chunks = [
        {"_id": f"n{n}#0", "doc_id": f"n{n}", "chunk_id": f"n{n}#0", "title": f"Note {n}", "vector": [0.1 * n] * 4}
        for n in (1, 2)
    ]
    source = tmp_path / "built.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in [header, *chunks]) + "\n", encoding="utf-8")
    assert import_chunks(engine, alias, source) == (2, [])

    # The manager is configured with the defaults (384 dimensions, m 16, k1 1.2): the header must not be.
    exported = tmp_path / "out.jsonl"
    export_to(engine, alias, 384, exported)
    written = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    assert {key: written["parameters"][key] for key in ("dimension", "hnsw_m", "bm25_k1", "bm25_b")} == {
        "dimension": 4,
        "hnsw_m": 32,
        "bm25_k1": 1.5,
        "bm25_b": 0.75,
    }
    elsewhere = EmbeddedEngine(tmp_path / "embedded")
    try:
        assert import_chunks(elsewhere, "copy", exported) == (2, [])
    finally:
        elsewhere.close()


def test_an_export_cut_short_is_reported(engine: Engine, alias: str, tmp_path: Path) -> None:
    header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 4}, "chunks": 3}
    chunk = {"_id": "n1#0", "doc_id": "n1", "chunk_id": "n1#0", "title": "Note", "vector": [0.1] * 4}
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(header) + "\n" + json.dumps(chunk) + "\n", encoding="utf-8")
    imported, failed = import_chunks(engine, alias, cut)
    assert imported == 1
    assert failed == [{"id": "cut.jsonl", "reason": "the header announces 3 chunks but the file holds 1 lines"}]


MINILM_RECORD = {"name": "sentence-transformers/all-MiniLM-L6-v2", "dimension": 4, "pooling": "mean", "normalize": True}
BGE_RECORD = {"name": "BAAI/bge-small-en-v1.5", "dimension": 4, "pooling": "cls", "normalize": True}


def export_file(path: Path, model: dict[str, Any] | None, dimension: int = 4) -> Path:
    header: dict[str, Any] = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": dimension}}
    if model is not None:
        header["model"] = model
    chunks = [
        {"_id": f"m{n}#0", "doc_id": f"m{n}", "chunk_id": f"m{n}#0", "title": f"Moved {n}", "vector": [0.2] * dimension}
        for n in (1, 2)
    ]
    path.write_text("\n".join(json.dumps(line) for line in [{**header, "chunks": 2}, *chunks]) + "\n", "utf-8")
    return path


def test_an_import_whose_vectors_another_model_made_writes_nothing(engine: Engine, alias: str, tmp_path: Path) -> None:
    # The index's vectors and the export's would live in two spaces under one record: refuse, naming both.
    assert import_chunks(engine, alias, export_file(tmp_path / "minilm.jsonl", MINILM_RECORD)) == (2, [])
    other = export_file(tmp_path / "bge.jsonl", BGE_RECORD)
    with pytest.raises(ModelMismatch, match=r"all-MiniLM-L6-v2.*bge-small-en-v1\.5.*nothing was written"):
        import_chunks(engine, alias, other)
    assert engine.count(alias) == 2
    again = export_file(tmp_path / "again.jsonl", {**MINILM_RECORD, "backend": "onnx", "precision": "int8"})
    assert import_chunks(engine, alias, again) == (2, [])  # another backend of the same model may


def test_an_import_of_another_dimension_is_refused_before_writing(engine: Engine, alias: str, tmp_path: Path) -> None:
    IndexManager(engine, alias, IndexParameters(dimension=8)).create()
    with pytest.raises(DimensionMismatch, match=r"8-dimensional.*4-dimensional.*nothing was written"):
        import_chunks(engine, alias, export_file(tmp_path / "four.jsonl", None))
    assert engine.count(alias) == 0


def test_an_import_builds_the_new_index_with_the_shards_and_replicas_the_settings_name(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    # An export of the embedded engine says 1 shard, 0 replicas; the cluster it moves to is configured for more.
    header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 4, "shards": 3}, "chunks": 1}
    chunk = {"_id": "n1#0", "doc_id": "n1", "chunk_id": "n1#0", "title": "Note", "vector": [0.1] * 4}
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, chunk]) + "\n", encoding="utf-8")
    topologies = {}
    for name, env in (("chosen", {"ESBRIDGE_MAPPING__SHARDS": "2", "ESBRIDGE_MAPPING__REPLICAS": "1"}), ("kept", {})):
        result = CliRunner().invoke(
            main, ["import", str(path), "--url", _url(engine), "--index", f"{alias}-{name}"], env=env
        )
        assert result.exit_code == 0, result.output
        settings = engine.get_index_settings(f"{alias}-{name}")
        topologies[name] = (int(settings["number_of_shards"]), int(settings["number_of_replicas"]))
    assert topologies == {"chosen": (2, 1), "kept": (3, 0)}


def test_an_engine_gone_mid_import_stops_it_with_the_count_and_a_rerun_writes_the_rest(
    engine_settings: Settings, engine: Engine, alias: str, tmp_path: Path
) -> None:
    header = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 3500}
    chunks = [
        {"_id": f"m{n}#0", "doc_id": f"m{n}", "chunk_id": f"m{n}#0", "vector": [0.2, 0.1, n / 3500]}
        for n in range(3500)
    ]
    source = tmp_path / "many.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in [header, *chunks]) + "\n", encoding="utf-8")
    with ForwardingProxy(engine_settings.url or "", lambda *_: None).running() as proxy:
        through_proxy = connect(load_settings(url=proxy.url, engine=engine_settings.engine, retries=0))
        going: Engine = GoesAwayAfter(through_proxy, proxy, bulks=1)
        with pytest.raises(
            EngineUnavailable, match=r"writes stopped after 1000 chunk writes: .* run the command again"
        ):
            import_chunks(going, alias, source, retry=RetryPolicy(attempts=2, initial_delay_s=0.01))
        through_proxy.close()
    engine.refresh(alias)
    assert engine.count(alias) == 1000

    assert import_chunks(engine, alias, source) == (3500, [])
    assert engine.count(alias) == 3500
