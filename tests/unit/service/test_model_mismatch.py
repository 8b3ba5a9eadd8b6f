"""The sidecar and the MCP server with a model other than the index's: 409 ``model_mismatch`` and a tool error,
both naming the two models; a service allowed to search anyway answers with a warning."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.embeddings.identity import recorded_identity
from esbridge.engines import connect
from esbridge.errors import EmbeddingError
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, call_tool, service_settings, tool_text

WRITE = {"X-API-Key": KEY}


def written_by_hashing(make_client: ClientFactory) -> None:
    """The index, created by the sidecar's first write, records the model that wrote it (hashing-32)."""
    writer = make_client(api_keys=[KEY])
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE).status_code == 200


def test_a_search_with_another_model_is_409_naming_both(make_client: ClientFactory) -> None:
    written_by_hashing(make_client)
    other: TestClient = make_client(embedder=OtherHashingEmbedder())
    answer = other.post("/v1/search", json={"query": "sourdough"})
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["kind"] == "model_mismatch"
    assert "made by hashing-32 (" in error["message"]
    assert "with other-hashing-32 (" in error["message"]


def test_a_write_with_another_model_is_409_and_writes_nothing(make_client: ClientFactory) -> None:
    written_by_hashing(make_client)
    other = make_client(embedder=OtherHashingEmbedder(), api_keys=[KEY])
    new = {"id": "tide", "title": "Tides", "text": "The moon pulls the sea."}
    answer = other.post("/v1/documents", json={"documents": [new]}, headers=WRITE)
    assert (answer.status_code, answer.json()["error"]["kind"]) == (409, "model_mismatch")
    found = make_client().post("/v1/search", json={"query": "tides moon"}).json()
    assert "tide" not in {hit["doc_id"] for hit in found["results"]}


def test_a_service_allowed_to_mismatch_answers_with_a_warning(make_client: ClientFactory) -> None:
    written_by_hashing(make_client)
    allowed = load_settings(index="notes", search={"allow_model_mismatch": True})
    answer = make_client(allowed, embedder=OtherHashingEmbedder()).post("/v1/search", json={"query": "sourdough"})
    assert answer.status_code == 200
    assert any(warning.startswith("model mismatch") for warning in answer.json()["warnings"])


def test_the_mcp_search_tool_reports_the_mismatch_as_a_tool_error_naming_both(make_client: ClientFactory) -> None:
    written_by_hashing(make_client)
    result = call_tool("search", {"query": "sourdough"}, embedder=OtherHashingEmbedder())
    assert result.is_error
    assert "made by hashing-32 (" in tool_text(result)
    assert "with other-hashing-32 (" in tool_text(result)


def test_the_mcp_index_status_names_the_model_the_index_records(make_client: ClientFactory) -> None:
    written_by_hashing(make_client)
    status = call_tool("index_status", {}, embedder=OtherHashingEmbedder()).structured_content
    assert status is not None
    assert status["model"] == "other-hashing-32"
    assert status["index_model"].startswith("hashing-32 (unknown fp32")


def test_readyz_is_503_while_every_search_would_be_refused_for_its_model(make_client: ClientFactory) -> None:
    """A sidecar deployed with another model than the index's would answer 409 to every search: not ready."""
    written_by_hashing(make_client)
    ready = make_client(embedder=OtherHashingEmbedder()).get("/readyz")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert (checks["engine"], checks["index"]) == ("ok", "ok")
    assert "made by hashing-32 (" in checks["model"] and "with other-hashing-32 (" in checks["model"]
    allowed = load_settings(index="notes", search={"allow_model_mismatch": True})
    assert make_client(allowed, embedder=OtherHashingEmbedder()).get("/readyz").status_code == 200
    assert make_client().get("/readyz").status_code == 200


class SixteenDimensions(HashingEmbedder):
    """A model whose vectors have another size than the index's."""

    name = identity = "hashing-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [vector[:16] for vector in super().embed(texts)]


def test_an_index_without_a_record_and_a_model_of_another_dimension_is_409_naming_both(
    make_client: ClientFactory,
) -> None:
    written_by_hashing(make_client)
    engine = connect(service_settings())
    try:
        for concrete in engine.alias_targets("notes") or ["notes"]:
            meta = dict(engine.get_mapping(concrete).get("_meta") or {})
            meta.pop("esbridge_model")
            engine.put_meta(concrete, meta)
    finally:
        engine.close()
    other = make_client(embedder=SixteenDimensions())
    answer = other.post("/v1/search", json={"query": "sourdough"})
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["kind"] == "model_mismatch"
    dimensions = "holds 32-dimensional vectors, which the model hashing-16 (16-dimensional) cannot have made"
    assert dimensions in error["message"]
    ready = other.get("/readyz")
    assert ready.status_code == 503
    assert "holds 32-dimensional vectors" in ready.json()["checks"]["model"]


class FailingEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError("out of memory", model=self.name)


def recorded_by_notes() -> str | None:
    engine = connect(service_settings())
    try:
        recorded = recorded_identity(engine.get_mapping("notes"), "notes")
        return recorded.name if recorded is not None else None
    finally:
        engine.close()


def test_a_sidecar_whose_first_write_fails_to_embed_records_no_model(make_client: ClientFactory) -> None:
    failing = make_client(embedder=FailingEmbedder(), api_keys=[KEY])
    first = failing.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert first.status_code == 503, first.text
    assert recorded_by_notes() is None, "the index was created, but holds no vector"

    other = make_client(embedder=OtherHashingEmbedder(), api_keys=[KEY])
    written = other.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})

    assert written.status_code == 200, written.text
    assert recorded_by_notes() == "other-hashing-32"
