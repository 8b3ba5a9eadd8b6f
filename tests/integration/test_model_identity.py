"""The model record with two real 384-dimensional models, through the command line, on OpenSearch, Elasticsearch
and the embedded engine: all-MiniLM-L6-v2 and bge-small-en-v1.5, both ONNX int8 from esbridge's model folder."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.profiles import BGE_SMALL, MINILM
from esbridge.embeddings.weights import weights_digest
from esbridge.engines import connect
from tests.integration.engines import engine_url, require_live
from tests.support.tiny_onnx import tiny_encoder

RECORDS = [
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough."},
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity."},
    {"id": "tides", "title": "Tides", "text": "The moon's pull raises the sea twice a day."},
]


def model_env(model: str) -> dict[str, str]:
    return {
        "ESBRIDGE_EMBEDDING__MODEL": model,
        "ESBRIDGE_EMBEDDING__BACKEND": "onnx",
        "ESBRIDGE_EMBEDDING__PRECISION": "int8",
    }


@pytest.fixture(params=["embedded", "opensearch", "elasticsearch"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """Command-line arguments naming the engine and a fresh alias; its versions are deleted afterwards."""
    kind: str = request.param
    alias = f"esbridge-test-model-{uuid.uuid4().hex[:10]}"
    if kind == "embedded":
        yield ["--engine", "embedded", "--index", alias]
        return
    require_live(kind)
    url = engine_url(kind)
    assert url is not None
    yield ["--url", url, "--engine", kind, "--index", alias]
    engine = connect(load_settings(url=url, engine=kind))
    try:
        for info in engine.list_indices(f"{alias}*"):
            engine.delete_index(info.name, missing_ok=True)
    finally:
        engine.close()


def run(args: list[str], model: str, tmp_path: Path, *extra: str) -> Result:
    env = {**model_env(model), "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    return CliRunner().invoke(main, [*args, *extra], env=env)


def answer(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_search_with_another_model_is_refused_naming_both_until_that_model_re_embeds(
    where: list[str], tmp_path: Path
) -> None:
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    first = answer(run(["ingest", str(source), "--json", *where], "all-minilm-l6-v2", tmp_path))
    assert (first["model_recorded"], first["embedded"]) == (MINILM, len(RECORDS))

    info = answer(run(["info", "--json", *where], "all-minilm-l6-v2", tmp_path))
    model = info["index"]["model"]
    assert (model["name"], model["backend"], model["precision"], model["dimension"]) == (MINILM, "onnx", "int8", 384)
    assert model["weights"] == weights_digest([locate_onnx(MINILM, "int8").onnx])

    refused = run(["search", "how is bread leavened", *where], "bge-small", tmp_path)
    assert refused.exit_code == 1
    assert f"holds vectors made by {MINILM} (onnx int8" in refused.output
    assert f"embed the query with {BGE_SMALL} (onnx int8" in refused.output

    forced = answer(
        run(["search", "how is bread leavened", "--json", "--allow-model-mismatch", *where], "bge-small", tmp_path)
    )
    assert any(warning.startswith("model mismatch") and BGE_SMALL in warning for warning in forced["warnings"])

    again = answer(run(["ingest", str(source), "--json", *where], "bge-small", tmp_path))
    assert (again["unchanged"], again["embedded"], again["model_recorded"], again["failed"]) == (0, 3, BGE_SMALL, [])
    shown = run(["info", *where], "bge-small", tmp_path)
    assert shown.exit_code == 0, shown.output
    assert re.search(rf"^Model\s+{re.escape(BGE_SMALL)}$", shown.output, re.MULTILINE), shown.output

    found = answer(run(["search", "how is bread leavened", "--json", *where], "bge-small", tmp_path))
    assert not any(warning.startswith("model mismatch") for warning in found["warnings"])
    assert found["results"][0]["doc_id"] == "bread"
    assert run(["search", "bread", *where], "all-minilm-l6-v2", tmp_path).exit_code == 1


def test_the_torch_model_searches_an_index_its_onnx_int8_export_made(tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    where = ["--engine", "embedded", "--index", "notes"]
    answer(run(["ingest", str(source), "--json", *where], "all-minilm-l6-v2", tmp_path))
    torch = {"ESBRIDGE_EMBEDDING__MODEL": MINILM, "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache")}
    found = answer(CliRunner().invoke(main, ["search", "how is bread leavened", "--json", *where], env=torch))
    assert found["warnings"] == []
    assert found["results"][0]["doc_id"] == "bread"


def test_record_model_records_an_unrecorded_index_and_asks_before_replacing_a_record(tmp_path: Path) -> None:
    where = ["--engine", "embedded", "--index", "notes"]
    created = run(["index", "create", *where], "all-minilm-l6-v2", tmp_path)
    assert created.exit_code == 0, created.output
    assert answer(run(["info", "--json", *where], "all-minilm-l6-v2", tmp_path))["index"]["model"] is None

    recorded = run(["index", "record-model", *where], "all-minilm-l6-v2", tmp_path)
    assert recorded.exit_code == 0, recorded.output
    assert f"notes now records {MINILM} (onnx int8" in recorded.output
    assert "already records" in run(["index", "record-model", *where], "all-minilm-l6-v2", tmp_path).output

    declined = run(["index", "record-model", *where], "bge-small", tmp_path)
    assert declined.exit_code == 1
    assert "cancelled; nothing was changed" in declined.output
    assert answer(run(["info", "--json", *where], "bge-small", tmp_path))["index"]["model"]["name"] == MINILM
    replaced = run(["index", "record-model", "--yes", *where], "bge-small", tmp_path)
    assert replaced.exit_code == 0, replaced.output
    assert answer(run(["info", "--json", *where], "bge-small", tmp_path))["index"]["model"]["name"] == BGE_SMALL


def test_record_model_refuses_a_model_of_another_dimension_than_the_index_maps(
    where: list[str], tmp_path: Path
) -> None:
    """It cannot have made the vectors; recorded anyway (the user said yes), the record named an 8-d model for
    384-d vectors: the index's own model was refused and the recorded one's kNN failed."""
    created = run(["index", "create", *where], "all-minilm-l6-v2", tmp_path)
    assert created.exit_code == 0, created.output
    eight = str(tiny_encoder(tmp_path / "eight", 8))
    refused = run(["index", "record-model", "--yes", *where], eight, tmp_path)
    assert refused.exit_code == 1
    assert f"the model {eight} makes 8-dimensional vectors but index {where[-1]} maps 384" in refused.output
    assert "nothing was changed" in refused.output
    assert answer(run(["info", "--json", *where], "all-minilm-l6-v2", tmp_path))["index"]["model"] is None


def test_an_index_made_before_model_records_is_checked_by_its_vectors(where: list[str], tmp_path: Path) -> None:
    """An index esbridge wrote before it recorded models (the record removed here, as such an index never had
    one): the default model changed, so its old vectors must not be searched silently with the new one."""
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    answer(run(["ingest", str(source), "--json", *where], "all-minilm-l6-v2", tmp_path))
    settings = {"url": where[1], "engine": where[3]} if where[0] == "--url" else {"engine": "embedded"}
    alias = where[-1]
    engine = connect(load_settings(**settings, embedding={"cache_dir": str(tmp_path / "cache")}))
    try:
        for concrete in engine.alias_targets(alias) or [alias]:
            meta = dict(engine.get_mapping(concrete).get("_meta") or {})
            meta.pop("esbridge_model")
            engine.put_meta(concrete, meta)
    finally:
        engine.close()
    assert answer(run(["info", "--json", *where], "all-minilm-l6-v2", tmp_path))["index"]["model"] is None

    found = answer(run(["search", "how is bread leavened", "--json", *where], "all-minilm-l6-v2", tmp_path))
    assert found["warnings"] == [] and found["results"][0]["doc_id"] == "bread"
    refused = run(["search", "how is bread leavened", *where], "bge-small", tmp_path)
    assert refused.exit_code == 1
    assert f"records no embedding model, and its vectors were not made by {BGE_SMALL} (onnx int8" in refused.output
    eight = str(tiny_encoder(tmp_path / "eight", 8))
    other = run(["search", "how is bread leavened", *where], eight, tmp_path)
    assert other.exit_code == 1
    assert f"holds 384-dimensional vectors, which the model {eight} (8-dimensional) cannot have made" in other.output

    again = answer(run(["ingest", str(source), "--json", *where], "bge-small", tmp_path))
    vectors = again["embedded"] + again["from_cache"]  # the vectors check embedded a few first, into the cache
    assert (again["unchanged"], vectors, again["model_recorded"]) == (0, len(RECORDS), BGE_SMALL)
    assert answer(run(["search", "bread", "--json", *where], "bge-small", tmp_path))["results"]
