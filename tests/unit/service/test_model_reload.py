"""/readyz after the query model's child process died and its replacement cannot load the model."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from esbridge.embeddings import CachedEmbedder
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.worker import ProcessEmbedder
from tests.support.child_embedders import DIE, embedder_while
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings


def test_readyz_names_a_model_the_replacement_child_cannot_load(make_client: ClientFactory, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    child = ProcessEmbedder(partial(embedder_while, str(folder)), model="vanishing", reply_timeout_s=5)
    with CachedEmbedder(child, EmbeddingCache(tmp_path / "cache")) as model:
        client = make_client(service_settings(api_keys=[KEY]), model)
        written = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
        assert written.status_code == 200, written.text
        assert client.get("/readyz").status_code == 200

        folder.rmdir()  # the model's files go away under the running service, then its child dies
        died = client.post("/v1/search", json={"query": DIE}).json()
        assert died["search_mode"] == "lexical-only"
        unloaded = client.post("/v1/search", json={"query": "sunlight"}).json()
        assert unloaded["search_mode"] == "lexical-only"
        problem = f"embedding model 'vanishing': model folder {folder} does not exist"
        assert any(problem in warning for warning in unloaded["warnings"])
        ready = client.get("/readyz")
        assert (ready.status_code, ready.json()["checks"]["model"]) == (503, problem)

        folder.mkdir()
        assert client.post("/v1/search", json={"query": "wind power"}).json()["search_mode"] == "hybrid"
        assert client.get("/readyz").status_code == 200
