"""Attaching to indices whose vectors are compared otherwise than by cosine, and to a data stream, on both engines.

The stored vectors are the model's, scaled by a different factor each, so cosine, L2 distance and inner
product rank them differently: kNN through the proposed field map must rank as the index's own space does.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cached import CachedEmbedder
from tests.integration.engines import engine_url
from tests.integration.raw_client import create_index, index_document
from tests.integration.test_attach import _client

DOCS = [
    ("p1", "Solar panel kit", "Photovoltaic modules turn sunlight into electricity for a roof."),
    ("p2", "Wind turbine", "A small turbine makes electricity from wind on a farm."),
    ("p3", "Sourdough starter", "Flour and water ferment into a starter that leavens bread."),
    ("p4", "Cast iron pan", "A heavy pan for searing steak and baking cornbread."),
    ("p5", "Home battery", "Stores solar electricity for the evening."),
    ("p6", "Heat pump", "Moves heat from outside air into the house using electricity."),
]
SCALES = [3.0, 0.4, 1.0, 2.5, 0.7, 1.6]
QUERY = "electricity from the sun"

# engine -> (its L2 space, its inner-product space), as the mapping names them -> the vector field's mapping
SPACES: dict[str, dict[str, dict[str, Any]]] = {
    "opensearch": {
        "l2": {"method": {"name": "hnsw", "engine": "lucene", "space_type": "l2"}},
        "innerproduct": {"method": {"name": "hnsw", "engine": "lucene", "space_type": "innerproduct"}},
    },
    "elasticsearch": {
        "l2_norm": {"index": True, "similarity": "l2_norm"},
        "max_inner_product": {"index": True, "similarity": "max_inner_product"},
    },
}
KINDS = ["l2", "inner-product"]


def _order(space: str, stored: np.ndarray, query: np.ndarray) -> list[str]:
    unit = query / np.linalg.norm(query)
    score = -np.linalg.norm(stored - unit, axis=1) if space in ("l2", "l2_norm") else stored @ unit
    return [DOCS[i][0] for i in np.argsort(-score)]


def _run(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env)


@pytest.mark.parametrize("kind", KINDS)
def test_knn_on_an_index_of_another_space_ranks_as_that_space_does(
    engine_kind: str, kind: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    space = list(SPACES[engine_kind])[KINDS.index(kind)]
    client = _client(engine_kind)
    name = f"esbridge-test-attach-space-{uuid.uuid4().hex[:8]}"
    vectors = np.array(embedder.embed([f"{title}\n{body}" for _, title, body in DOCS]), dtype=np.float64)
    stored = vectors * np.array(SCALES)[:, None]
    field_type = "knn_vector" if engine_kind == "opensearch" else "dense_vector"
    size = {"dimension": embedder.dimension} if engine_kind == "opensearch" else {"dims": embedder.dimension}
    mappings = {
        "properties": {
            "title": {"type": "text"},
            "body": {"type": "text"},
            "emb": {"type": field_type, **size, **SPACES[engine_kind][space]},
        }
    }
    try:
        create_index(engine_kind, client, name, mappings=mappings, knn=True)
        for (doc_id, title, body), vector in zip(DOCS, stored, strict=True):
            document = {"title": title, "body": body, "emb": vector.tolist()}
            index_document(engine_kind, client, name, document, id=doc_id)
        client.indices.refresh(index=name)
        config = tmp_path / "esbridge.toml"
        common = ["--url", str(engine_url(engine_kind)), "--engine", engine_kind, "--config", str(config)]
        inspected = _run(["index", "inspect", name, "--write", *common])
        assert inspected.exit_code == 0, inspected.output
        assert f'space = "{space}"' in config.read_text(encoding="utf-8")
        found = _run(
            ["search", QUERY, "--json", "--index", name, *common], env={"ESBRIDGE_PIPELINE__RETRIEVERS": '["knn"]'}
        )
        assert found.exit_code == 0, found.output
        answer = json.loads(found.output)
        assert answer["warnings"] == []
        query = np.array(embedder.embed([QUERY])[0], dtype=np.float64)
        assert [hit["doc_id"] for hit in answer["results"]] == _order(space, stored, query)[: len(answer["results"])]
        assert _order(space, stored, query) != _order("cosine-like", vectors, query)  # the scaling changed the order
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()


def test_a_data_stream_rolled_over_is_inspected_and_searched_across_its_backing_indices(
    engine_kind: str, tmp_path: Path
) -> None:
    client = _client(engine_kind)
    try:
        client.indices.get_data_stream(name="*")
    except Exception as exc:  # (each client's own error type) a build without the data streams module
        client.close()
        if "no handler found" not in str(exc):
            raise
        pytest.skip(f"this {engine_kind} build lacks data streams ({exc})")
    stream = f"esbridge-test-attach-stream-{uuid.uuid4().hex[:8]}"
    template = {
        "index_patterns": [f"{stream}*"],
        "data_stream": {},
        "priority": 500,
        "template": {
            "mappings": {
                "properties": {
                    "@timestamp": {"type": "date"},
                    "message": {"type": "text"},
                    "level": {"type": "keyword"},
                }
            }
        },
    }
    lines = [("solar inverter fault", "error"), ("solar output normal", "info")]
    try:
        if engine_kind == "opensearch":
            client.indices.put_index_template(name=stream, body=template)
        else:
            client.indices.put_index_template(name=stream, **template)
        for number, (message, level) in enumerate(lines):
            if number:
                client.indices.rollover(alias=stream)  # the second line goes to a second backing index
            document = {"@timestamp": f"2026-11-2{number}T10:00:00Z", "message": message, "level": level}
            index_document(engine_kind, client, stream, document, op_type="create", refresh=True)
        config = tmp_path / "esbridge.toml"
        common = ["--url", str(engine_url(engine_kind)), "--engine", engine_kind, "--config", str(config)]
        inspected = _run(["index", "inspect", stream, "--write", *common])
        assert inspected.exit_code == 0, inspected.output  # before: "expected one index behind ..., found 2"
        written = config.read_text(encoding="utf-8")
        assert 'date = "@timestamp"' in written and "message" in written
        found = _run(
            ["search", "solar", "--json", "--index", stream, *common], env={"ESBRIDGE_PIPELINE__RETRIEVERS": '["bm25"]'}
        )
        assert found.exit_code == 0, found.output  # before: refused as above, for every search
        assert len({hit["doc_id"] for hit in json.loads(found.output)["results"]}) == 2  # one in each backing index
    finally:
        try:
            client.indices.delete_data_stream(name=stream)
        finally:
            client.indices.delete_index_template(name=stream)
            client.close()
