"""Attaching esbridge to an index it did not create: made with the engines' own clients, on both engines.

The index has its own field names (``name``, ``body``, ``sku``, ``labels``, ``updated``, ``embedding``);
``esbridge index inspect --write`` proposes its field map, and search, explain, the read-only guard and
``eval --reuse`` work on it through that map alone.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cached import CachedEmbedder
from tests.integration.engines import engine_url
from tests.integration.test_model_identity import model_env

PRODUCTS = [
    ("p1", "SKU-1", "Solar panel kit", "Photovoltaic modules turn sunlight into electricity for a roof.", "energy"),
    ("p2", "SKU-2", "Wind turbine", "A small turbine makes electricity from wind on a farm.", "energy"),
    ("p3", "SKU-3", "Sourdough starter", "Flour and water ferment into a starter that leavens bread.", "food"),
    ("p4", "SKU-4", "Cast iron pan", "A heavy pan for searing steak and baking cornbread.", "kitchen"),
    ("p5", "SKU-5", "Home battery", "Stores solar electricity for the evening.", "energy"),
]


def _client(kind: str) -> Any:
    url = engine_url(kind)
    if kind == "opensearch":
        from opensearchpy import OpenSearch

        return OpenSearch(hosts=[url])
    from elasticsearch import Elasticsearch

    return Elasticsearch(url)


def _mapping(kind: str, dimension: int) -> dict[str, Any]:
    if kind == "opensearch":
        vector = {
            "type": "knn_vector",
            "dimension": dimension,
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        }
    else:
        vector = {"type": "dense_vector", "dims": dimension, "index": True, "similarity": "cosine"}
    return {
        "properties": {
            "name": {"type": "text"},
            "body": {"type": "text"},
            "sku": {"type": "keyword"},
            "labels": {"type": "keyword"},
            "updated": {"type": "date"},
            "related": {"type": "keyword"},
            "embedding": vector,
        }
    }


@pytest.fixture
def foreign(engine_kind: str, embedder: CachedEmbedder) -> Iterator[tuple[str, Any]]:
    """A product catalogue written by someone else's pipeline, with the engine's own client."""
    client = _client(engine_kind)
    name = f"esbridge-test-attach-{uuid.uuid4().hex[:8]}"
    body: dict[str, Any] = {"mappings": _mapping(engine_kind, embedder.dimension)}
    if engine_kind == "opensearch":
        body["settings"] = {"index": {"knn": True}}
        client.indices.create(index=name, body=body)
    else:
        client.indices.create(index=name, mappings=body["mappings"])
    recent = (datetime.now(timezone.utc) - timedelta(days=2)).isoformat()
    vectors = embedder.embed([f"{title}\n{text}" for _, _, title, text, _ in PRODUCTS])
    try:
        for (doc_id, sku, title, text, label), vector in zip(PRODUCTS, vectors, strict=True):
            document: dict[str, Any] = {
                "name": title,
                "body": text,
                "sku": sku,
                "labels": [label],
                "updated": recent,
                "related": ["SKU-1"] if sku == "SKU-5" else [],
                "embedding": list(vector),
            }
            if engine_kind == "opensearch":
                client.index(index=name, id=doc_id, body=document)
            else:
                client.index(index=name, id=doc_id, document=document)
        client.indices.refresh(index=name)
        yield name, client
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _attached(engine_kind: str, name: str, config: Path) -> list[str]:
    """The options that reach the index once ``index inspect --write`` has attached it in ``config``."""
    common = ["--url", str(engine_url(engine_kind)), "--engine", engine_kind, "--config", str(config)]
    inspected = _run(["index", "inspect", name, "--write", *common])
    assert inspected.exit_code == 0, inspected.output
    return common


def _mapping_and_count(client: Any, name: str) -> tuple[Any, int]:
    mapping = dict(client.indices.get_mapping(index=name))
    return mapping[name]["mappings"], int(dict(client.count(index=name))["count"])


def test_inspect_write_then_hybrid_search_explains_with_the_mapped_fields(
    engine_kind: str, foreign: tuple[str, Any], tmp_path: Path
) -> None:
    name, _ = foreign
    config = tmp_path / "esbridge.toml"
    url = str(engine_url(engine_kind))
    common = ["--url", url, "--engine", engine_kind, "--config", str(config)]

    inspected = _run(["index", "inspect", name, "--write", *common])
    assert inspected.exit_code == 0, inspected.output
    written = config.read_text(encoding="utf-8")
    assert f"[fields.{name}]" in written and 'vector = "embedding"' in written and 'id = "sku"' in written

    found = _run(["search", "photovoltaic modules on my roof", "--explain", "--json", "--index", name, *common])
    assert found.exit_code == 0, found.output
    response = json.loads(found.output)
    assert response["search_mode"] == "hybrid"
    assert response["results"][0]["doc_id"] == "SKU-1"  # the mapped id field
    assert response["results"][0]["title"] == "Solar panel kit"  # the mapped title
    both = [hit for hit in response["results"] if set(hit["explain"]["retrievers"]) == {"bm25", "knn"}]
    assert both, "no result was found by both retrievers"
    for hit in response["results"]:
        for retriever, explained in hit["explain"]["retrievers"].items():
            expected = {"embedding"} if retriever == "knn" else {"name^2", "body"}
            assert set(explained["fields"]) == expected
    # Recency reads the mapped date (two days old: the 7-day tier); no status field: lifecycle is off.
    scored = [hit for hit in response["results"] if hit["explain"]["fused_score"] > 0]
    assert scored and {hit["explain"]["recency_multiplier"] for hit in scored} == {1.2}
    assert set(response["details"]["off"]) == {"lifecycle"}

    # Graph expansion follows the mapped links field: BM25 alone finds the battery, its link adds the kit.
    linked = CliRunner().invoke(
        main,
        ["search", "evening", "--graph", "--explain", "--json", "--index", name, *common],
        env={"ESBRIDGE_PIPELINE__RETRIEVERS": '["bm25"]'},
    )
    assert linked.exit_code == 0, linked.output
    expanded = json.loads(linked.output)
    assert expanded["warnings"] == []
    assert [(hit["doc_id"], hit["explain"]["neighbour_of"]) for hit in expanded["results"]] == [
        ("SKU-5", []),
        ("SKU-1", ["p5"]),
    ]

    filtered = _run(["search", "electricity", "--filter", "tags=food", "--json", "--index", name, *common])
    assert filtered.exit_code == 0, filtered.output
    assert [hit["doc_id"] for hit in json.loads(filtered.output)["results"]] == ["SKU-3"]


def test_ingest_into_an_attached_index_is_refused_and_changes_nothing(
    engine_kind: str, foreign: tuple[str, Any], tmp_path: Path
) -> None:
    name, client = foreign
    common = _attached(engine_kind, name, tmp_path / "esbridge.toml")
    before = _mapping_and_count(client, name)
    records = tmp_path / "more.jsonl"
    records.write_text(json.dumps({"id": "x", "title": "Extra", "text": "More text."}) + "\n", encoding="utf-8")

    for args in (
        ["ingest", str(records), "--index", name],
        ["index", "reindex", "--index", name, "--yes"],
        ["mapping", "apply", "--index", name, "--yes"],
    ):
        refused = CliRunner().invoke(main, [*args, *common])
        assert refused.exit_code != 0
        assert "--write-attached" in refused.output, refused.output
    assert _mapping_and_count(client, name) == before


def test_eval_reuse_judges_an_attached_index_by_its_document_ids(
    engine_kind: str, foreign: tuple[str, Any], tmp_path: Path
) -> None:
    name, _ = foreign
    common = _attached(engine_kind, name, tmp_path / "esbridge.toml")
    dataset = tmp_path / "judged"
    (dataset / "qrels").mkdir(parents=True)
    queries = {"q1": "rooftop photovoltaic", "q2": "bread leavening", "q3": "pan for steak"}
    judged = {"q1": "SKU-1", "q2": "SKU-3", "q3": "SKU-4"}
    (dataset / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": key, "text": text}) for key, text in queries.items()), encoding="utf-8"
    )
    (dataset / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": sku, "title": title, "text": text}) for _, sku, title, text, _ in PRODUCTS),
        encoding="utf-8",
    )
    (dataset / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in judged.items()), encoding="utf-8"
    )

    evaluated = _run(
        ["eval", str(dataset), "--reuse", "--index", name, "--methods", "bm25,knn,default", "--json", *common]
    )
    assert evaluated.exit_code == 0, evaluated.output
    rows = {row["name"]: row for row in json.loads(evaluated.output)["results"]}
    assert rows["default"]["ndcg@10"] == pytest.approx(1.0)
    assert rows["bm25"]["ndcg@10"] > 0.5

    ingesting = CliRunner().invoke(main, ["eval", str(dataset), "--index", name, "--methods", "bm25", *common])
    assert ingesting.exit_code != 0 and "--reuse" in ingesting.output


def test_a_vector_dimension_that_does_not_match_the_mapping_is_refused_before_any_search(
    engine_kind: str, foreign: tuple[str, Any], tmp_path: Path
) -> None:
    name, _ = foreign
    config = tmp_path / "esbridge.toml"
    common = _attached(engine_kind, name, config)
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("dimension = 384", "dimension = 768"), encoding="utf-8")
    refused = CliRunner().invoke(main, ["search", "solar", "--index", name, *common])
    assert refused.exit_code != 0
    assert "says embedding has dimension 768, but the index maps it with 384" in refused.output, refused.output


def test_an_attached_index_records_no_model_and_is_searched_as_before_until_one_is_recorded(
    engine_kind: str, foreign: tuple[str, Any], tmp_path: Path
) -> None:
    name, client = foreign
    common = _attached(engine_kind, name, tmp_path / "esbridge.toml")
    minilm = {**model_env("all-minilm-l6-v2"), "HF_HUB_OFFLINE": "1"}
    bge = {**model_env("bge-small"), "HF_HUB_OFFLINE": "1"}
    info = CliRunner().invoke(main, ["info", "--index", name, *common], env=minilm)
    assert info.exit_code == 0, info.output
    assert re.search(r"^Model\s+not recorded", info.output, re.MULTILINE), info.output

    found = CliRunner().invoke(main, ["search", "photovoltaic roof", "--json", "--index", name, *common], env=minilm)
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)["warnings"] == []

    before = _mapping_and_count(client, name)
    refused = CliRunner().invoke(main, ["index", "record-model", "--index", name, *common], env=minilm)
    assert refused.exit_code != 0 and "--write-attached" in refused.output, refused.output
    assert _mapping_and_count(client, name) == before

    recorded = CliRunner().invoke(
        main, ["index", "record-model", "--write-attached", "--index", name, *common], env=minilm
    )
    assert recorded.exit_code == 0, recorded.output
    assert f"{name} now records sentence-transformers/all-MiniLM-L6-v2" in recorded.output
    other = CliRunner().invoke(main, ["search", "photovoltaic roof", "--index", name, *common], env=bge)
    assert other.exit_code == 1
    assert "made by sentence-transformers/all-MiniLM-L6-v2" in other.output
    assert "with BAAI/bge-small-en-v1.5" in other.output
