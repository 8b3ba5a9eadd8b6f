"""`esbridge serve` as its own process, a real uvicorn on loopback, backed by a live engine and the real model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from tests.integration.engines import engine_url, load_records
from tests.support.serving import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = "live-test-key-4f1c"
RECORDS: list[dict[str, Any]] = [
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity."},
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough."},
]


@pytest.fixture
def sidecar(
    request: pytest.FixtureRequest,
    engine_kind: str,
    engine: Engine,
    alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
) -> Iterator[str]:
    """The base URL of `esbridge serve` on loopback; an indirect parameter is the --host to give it."""
    host: str | None = getattr(request, "param", None)
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ESBRIDGE_API_KEYS": KEY,
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
    }
    url = engine_url(engine_kind)
    assert url is not None
    command = [sys.executable, "-m", "esbridge", "serve", "--port", str(port), "--url", url]
    command += ["--engine", engine_kind, "--index", alias, "--log-level", "warning"]
    if host is not None:
        command += ["--host", host]
    log = (tmp_path / "serve.log").open("w+b")
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://{host or '127.0.0.1'}:{port}"
    try:
        _wait_ready(base, process, log)
        yield base
        process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal so the exit status reports it.
        assert process.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.seek(0)
        output = log.read().decode(errors="replace")
        log.close()
        assert KEY not in output  # keys are never logged


def _wait_ready(base: str, process: subprocess.Popen[bytes], log: Any) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail(f"esbridge serve exited with {process.returncode}: {log.read().decode(errors='replace')}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    pytest.fail("esbridge serve was not ready within 120 s")


@pytest.mark.parametrize("engine_kind", ["opensearch"], indirect=True)
def test_the_sidecar_searches_writes_and_deletes_over_real_http(sidecar: str) -> None:
    with pytest.raises(httpx.ConnectError):  # the default listen address is 127.0.0.1, not every interface
        httpx.get(sidecar.replace("127.0.0.1", "127.0.0.2") + "/healthz", timeout=5)
    with httpx.Client(base_url=sidecar, timeout=30) as http:
        assert http.get("/healthz").json() == {"status": "ok", "checks": {}}
        found = http.post("/v1/search", json={"query": "how is bread leavened", "top_n": 3})
        assert found.status_code == 200
        assert found.json()["search_mode"] == "hybrid"
        assert found.json()["results"][0]["doc_id"] == "bread"

        document = {"id": "tides", "title": "Tidal power", "text": "The moon's pull moves oceans past turbines."}
        refused = http.post("/v1/documents", json={"documents": [document]})
        assert refused.status_code == 401
        written = http.post("/v1/documents", json={"documents": [document]}, headers={"X-API-Key": KEY})
        assert written.status_code == 200
        ok = {"position": 0, "id": "tides", "status": "ok", "chunks": 1, "error": None, "warnings": []}
        assert written.json()["results"] == [ok]
        tides = http.post("/v1/search", json={"query": "energy from the ocean and the moon", "top_n": 1})
        assert tides.json()["results"][0]["doc_id"] == "tides"

        deleted = http.delete("/v1/documents/tides", headers={"Authorization": f"Bearer {KEY}"})
        assert deleted.json() == {"id": "tides", "deleted_chunks": 1, "owned": []}
        after = http.post("/v1/search", json={"query": "energy from the ocean and the moon", "top_n": 3})
        assert "tides" not in {hit["doc_id"] for hit in after.json()["results"]}

        metrics = http.get("/metrics").text
        assert 'esbridge_searches_total{search_mode="hybrid"} 3.0' in metrics
        assert 'esbridge_search_stage_duration_seconds_count{stage="embed"}' in metrics


@pytest.mark.parametrize("engine_kind", ["opensearch"], indirect=True)
@pytest.mark.parametrize("sidecar", ["127.0.0.2"], indirect=True)
def test_the_sidecar_listens_only_on_the_host_it_is_given(sidecar: str) -> None:
    assert sidecar.startswith("http://127.0.0.2:")
    assert httpx.get(f"{sidecar}/healthz", timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(sidecar.replace("127.0.0.2", "127.0.0.1") + "/healthz", timeout=5)
