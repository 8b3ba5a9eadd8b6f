"""Attached indices whose stored vectors are not unit length, searched with query vectors that are not unit
length either (``[embedding] normalize = false``), per vector space, on both engines.

For each space the kNN hits must come back in that space's exact order for the vector esbridge sends, each
hit's score in ``--explain`` must be the engine's function of that space (so it is what the engine said), and
every fusion must turn them into scores within [0, 1]. An Elasticsearch ``dot_product`` field holds only unit
vectors and refuses a query vector that is not unit length: esbridge sends it at unit length, which keeps the
order of the embedder's vector.
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
from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import close_model
from esbridge.embeddings.factory import load_model
from tests.integration.engines import engine_url, require_live
from tests.integration.raw_client import create_index, index_document
from tests.integration.test_attach import _client
from tests.integration.test_attach_spaces import DOCS, QUERY, SCALES

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
QUERY_MODEL = {
    "ESBRIDGE_EMBEDDING__MODEL": MINILM,
    "ESBRIDGE_EMBEDDING__BACKEND": "onnx",
    "ESBRIDGE_EMBEDDING__PRECISION": "fp32",
    "ESBRIDGE_EMBEDDING__NORMALIZE": "false",
}
# engine -> spaces as the mapping names them (OpenSearch's Lucene engine; faiss is mapped alike)
SPACES = {
    "opensearch": ["l2", "cosinesimil", "innerproduct"],
    "elasticsearch": ["l2_norm", "cosine", "dot_product", "max_inner_product"],
}
CASES = [(kind, space) for kind, spaces in SPACES.items() for space in spaces]


def _engine_score(space: str, stored: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each engine's documented score of each stored vector for ``query``."""
    if space in ("l2", "l2_norm"):
        return np.asarray(1.0 / (1.0 + np.sum((stored - query) ** 2, axis=1)))
    if space in ("cosinesimil", "cosine", "dot_product"):
        cosines = stored @ query / (np.linalg.norm(stored, axis=1) * np.linalg.norm(query))
        return np.asarray((1.0 + cosines) / 2.0)
    inner = stored @ query  # innerproduct, max_inner_product
    return np.asarray(np.where(inner >= 0, inner + 1.0, 1.0 / (1.0 - inner)))


@pytest.fixture(scope="module")
def query_vector() -> np.ndarray:
    """The query's vector as esbridge embeds it with ``QUERY_MODEL``: not unit length."""
    model = load_model(EmbeddingSettings(model=MINILM, backend="onnx", precision="fp32", normalize=False))
    try:
        vector = np.array(model.embed([QUERY])[0], dtype=np.float64)
    finally:
        close_model(model)
    assert abs(np.linalg.norm(vector) - 1.0) > 0.5, "the query vector must not be unit length"
    return vector


def _create(kind: str, space: str, name: str, stored: np.ndarray) -> Any:
    client = _client(kind)
    dimension = stored.shape[1]
    if kind == "opensearch":
        method = {"name": "hnsw", "engine": "lucene", "space_type": space}
        field = {"type": "knn_vector", "dimension": dimension, "method": method}
    else:
        field = {"type": "dense_vector", "dims": dimension, "index": True, "similarity": space}
    mappings = {"properties": {"title": {"type": "text"}, "body": {"type": "text"}, "emb": field}}
    create_index(kind, client, name, mappings=mappings, knn=True)
    for (doc_id, title, body), vector in zip(DOCS, stored, strict=True):
        index_document(kind, client, name, {"title": title, "body": body, "emb": vector.tolist()}, id=doc_id)
    client.indices.refresh(index=name)
    return client


def _search(common: list[str], env: dict[str, str], query: str = QUERY) -> dict[str, Any]:
    found = CliRunner().invoke(main, ["search", query, "--json", "--explain", *common], env={**QUERY_MODEL, **env})
    assert found.exit_code == 0, found.output
    answer: dict[str, Any] = json.loads(found.output)
    return answer


@pytest.mark.parametrize(("kind", "space"), CASES)
def test_knn_over_vectors_that_are_not_unit_length_ranks_and_scores_as_the_space_does(
    kind: str, space: str, embedder: Any, query_vector: np.ndarray, tmp_path: Path
) -> None:
    require_live(kind)
    vectors = np.array(embedder.embed([f"{title}\n{body}" for _, title, body in DOCS]), dtype=np.float64)
    # dot_product holds unit vectors only (Elasticsearch refuses others when they are written)
    stored = vectors if space == "dot_product" else vectors * np.array(SCALES)[:, None]
    name = f"h135-{space.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    client = _create(kind, space, name, stored)
    try:
        config = tmp_path / "esbridge.toml"
        common = ["--index", name, "--url", str(engine_url(kind)), "--engine", kind, "--config", str(config)]
        inspected = CliRunner().invoke(main, ["index", "inspect", name, "--write", *common[2:]])
        assert inspected.exit_code == 0, inspected.output
        assert f"space {space}" in inspected.output and f'space = "{space}"' in config.read_text(encoding="utf-8")

        answer = _search(common, {"ESBRIDGE_PIPELINE__RETRIEVERS": '["knn"]'})
        assert answer["warnings"] == []  # before, dot_product: "kNN failed ... can only be used with unit-length"
        sent = query_vector / np.linalg.norm(query_vector) if space == "dot_product" else query_vector
        expected = _engine_score(space, stored, sent)
        order = [DOCS[i][0] for i in np.argsort(-expected)]
        hits = answer["results"]
        assert [hit["doc_id"] for hit in hits] == order[: len(hits)] and len(hits) == len(DOCS)
        by_id = {doc_id: score for (doc_id, _, _), score in zip(DOCS, expected, strict=True)}
        for hit in hits:  # what --explain says the engine scored is the space's own function
            assert hit["explain"]["retrievers"]["knn"]["score"] == pytest.approx(by_id[hit["doc_id"]], rel=1e-4)
            assert 0.0 <= hit["score"] <= 1.0

        for fusion in ("qpp", "linear", "dbsf"):
            fused = _search(
                common, {"ESBRIDGE_PIPELINE__RETRIEVERS": '["bm25", "knn"]', "ESBRIDGE_PIPELINE__FUSION": fusion}
            )
            assert fused["warnings"] == [], fusion
            scores = [hit["score"] for hit in fused["results"]]
            assert scores and all(0.0 <= score <= 1.0 for score in scores), (fusion, scores)
            assert scores == sorted(scores, reverse=True), fusion
            knn_ranked = [hit["doc_id"] for hit in sorted(fused["results"], key=_knn_rank) if _knn_rank(hit) < 99]
            assert knn_ranked == order[: len(knn_ranked)], fusion
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()


def _knn_rank(hit: dict[str, Any]) -> int:
    knn = hit["explain"]["retrievers"].get("knn")
    return int(knn["rank"]) if knn else 99


def test_a_field_map_naming_no_space_takes_the_mappings_and_one_naming_another_is_refused(
    embedder: Any, tmp_path: Path
) -> None:
    require_live("elasticsearch")
    vectors = np.array(embedder.embed([f"{title}\n{body}" for _, title, body in DOCS]), dtype=np.float64)
    name = f"h135-unnamed-space-{uuid.uuid4().hex[:8]}"
    client = _create("elasticsearch", "dot_product", name, vectors)
    try:
        config = tmp_path / "esbridge.toml"
        url = str(engine_url("elasticsearch"))
        common = ["--index", name, "--url", url, "--engine", "elasticsearch", "--config", str(config)]
        # written by hand: no space, as a field map may be
        config.write_text(
            f'[fields.{name}]\ntext = {{ "body" = 1.0 }}\nvector = "emb"\ndimension = {vectors.shape[1]}\n',
            encoding="utf-8",
        )
        answer = _search(common, {"ESBRIDGE_PIPELINE__RETRIEVERS": '["knn"]'})
        assert answer["warnings"] == [] and len(answer["results"]) == len(DOCS)  # before: HTTP 400, unit-length
        config.write_text(config.read_text(encoding="utf-8") + 'space = "cosine"\n', encoding="utf-8")
        refused = CliRunner().invoke(main, ["search", QUERY, *common], env=QUERY_MODEL)
        assert refused.exit_code != 0
        assert "says emb has space 'cosine', but the index maps it with 'dot_product'" in refused.output
        assert 'set space = "dot_product"' in refused.output
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()
