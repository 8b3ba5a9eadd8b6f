"""What import refuses or reports about the index it writes into, on the real engines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.identity import ModelIdentity
from esbridge.engines import Engine
from esbridge.errors import ConfigError, ModelMismatch
from esbridge.ingest.model_record import mark_reembedding
from esbridge.ingest.transfer import import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.test_transfer import BGE_RECORD, MINILM_RECORD, export_file


def vectors(engine: Engine, alias: str) -> dict[str, list[float]]:
    return {
        hit.id: hit.source["vector"] for hit in engine.scan(alias, {"match_all": {}}, ["vector"], sort_field="chunk_id")
    }


def test_an_import_into_an_index_whose_re_embedding_did_not_finish_writes_nothing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    # An ingest with bge stopped half-way: the index holds vectors of both models under MiniLM's record, and the
    # mark does not say which chunks hold which; an import of either model's vectors would add to the mix.
    minilm = export_file(tmp_path / "minilm.jsonl", MINILM_RECORD)
    assert import_chunks(engine, alias, minilm) == (2, [])
    mark_reembedding(engine, alias, ModelIdentity.model_validate(BGE_RECORD))
    before = vectors(engine, alias)
    for model in (MINILM_RECORD, BGE_RECORD, None):
        export = export_file(tmp_path / "again.jsonl", model)
        with pytest.raises(ModelMismatch, match=r"being re-embedded with BAAI/bge-small-en-v1\.5.*nothing was written"):
            import_chunks(engine, alias, export)
    engine.refresh(alias)
    assert vectors(engine, alias) == before

    refused = CliRunner().invoke(main, ["import", str(minilm), "--url", engine.url, "--index", alias])
    assert refused.exit_code == 1
    assert "Finish the re-embedding first (`esbridge ingest` with [embedding] model = 'BAAI/bge-small" in refused.output


@pytest.mark.filterwarnings("always::esbridge.errors.EsbridgeWarning")
def test_an_import_counts_a_repeated_id_once_and_says_it_replaced_the_earlier(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    header: dict[str, Any] = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 3}
    chunks = [
        {"_id": f"{name}#0", "doc_id": name, "chunk_id": f"{name}#0", "title": title, "vector": [0.1, 0.2, 0.3]}
        for name, title in (("a", "first"), ("b", "other"), ("a", "second"))
    ]
    path = tmp_path / "twice.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, *chunks]) + "\n", encoding="utf-8")

    result = CliRunner().invoke(main, ["import", str(path), "--json", "--url", engine.url, "--index", alias])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chunks_imported"] == 2
    assert "1 chunk line(s) whose _id an earlier line has" in result.stderr
    engine.refresh(alias)
    assert engine.count(alias) == 2
    titles = {
        hit.id: hit.source["title"] for hit in engine.scan(alias, {"match_all": {}}, ["title"], sort_field="chunk_id")
    }
    assert titles == {"a#0": "second", "b#0": "other"}


def test_an_import_into_an_alias_over_an_index_esbridge_did_not_make_writes_nothing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    # Its dynamic mapping would take the vectors as plain numbers: stored, counted, and never found by kNN.
    engine.create_index(f"{alias}-data", {"mappings": {"properties": {"title": {"type": "text"}}}})
    engine.update_aliases([{"add": {"index": f"{alias}-data", "alias": alias}}])
    with pytest.raises(ConfigError, match=rf"index {alias} maps no vector field 'vector'.*nothing was written"):
        import_chunks(engine, alias, export_file(tmp_path / "bge.jsonl", BGE_RECORD))
    engine.refresh(alias)
    assert engine.count(alias) == 0
    assert "vector" not in engine.get_mapping(alias).get("properties", {})


def test_an_import_into_an_index_with_a_dynamic_mapping_that_lacks_a_field_writes_nothing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    # As ingest refuses it: the engine would guess the field's type (a title as a keyword, a tag as text).
    body = IndexManager(engine, alias, IndexParameters(dimension=4)).wanted_body()
    del body["mappings"]["properties"]["title"]
    body["mappings"]["dynamic"] = True
    engine.create_index(f"{alias}-v1", body)
    engine.update_aliases([{"add": {"index": f"{alias}-v1", "alias": alias, "is_write_index": True}}])
    with pytest.raises(ConfigError, match=rf"index {alias} has no mapping for title.*nothing was written"):
        import_chunks(engine, alias, export_file(tmp_path / "bge.jsonl", BGE_RECORD))
    assert engine.count(alias) == 0
