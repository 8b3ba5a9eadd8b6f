"""A sidecar whose configured re-ranker cannot load: every search says so, /readyz names the model
rather than the engine, and no failed attempt leaves an engine open."""

from __future__ import annotations

import os
from pathlib import Path

from esbridge.config import load_settings
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_re_ranker_that_cannot_load_is_named_and_leaks_no_engine(make_client: ClientFactory, tmp_path: Path) -> None:
    missing = tmp_path / "no-cross-encoder"
    writer = make_client(api_keys=[KEY])
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).status_code == 200
    rerank = {"enabled": True, "model": str(missing), "backend": "onnx", "precision": "int8"}
    client = make_client(load_settings(index="notes", pipeline={"rerank": rerank}))

    ready = client.get("/readyz")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["model"] == f"re-ranker {str(missing)!r}: model folder {missing} does not exist"
    assert checks["engine"] == "unknown" and checks["index"] == "unknown"

    client.post("/v1/search", json={"query": "warm up"})
    before = open_files()
    for number in range(10):
        answer = client.post("/v1/search", json={"query": f"sunlight {number}"})
        assert answer.status_code == 503
        assert answer.json()["error"]["kind"] == "model_unavailable"
        assert str(missing) in answer.json()["error"]["message"]
    assert open_files() <= before, "each failed attempt opened the embedded engine and left it open"
