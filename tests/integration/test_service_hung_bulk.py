"""A sidecar write whose bulk request the engine never answers (a node that hangs while indexing), on a live engine
behind a proxy that holds every ``_bulk`` request: the write stops by its request's time and grace, says which
settings, and is not left running, however long the engine client's own timeout and retries would wait."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.service.app import create_app
from tests.integration.engines import engine_url

KEY = "hung-bulk-test-key-0123"


def _pipe(source: socket.socket, target: socket.socket, hold_bulk: bool) -> None:
    try:
        while chunk := source.recv(65536):
            if hold_bulk and chunk.split(b"\r\n", 1)[0].find(b"/_bulk") >= 0:
                threading.Event().wait(60)  # the node never answers this request
                return
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            end.close()


@pytest.fixture
def bulk_holding_proxy(engine_kind: str) -> Iterator[str]:
    """The engine's URL through a proxy that forwards everything but ``_bulk`` requests, which it holds."""
    url = engine_url(engine_kind)
    assert url is not None
    upstream = urlsplit(url)
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            engine = socket.create_connection((upstream.hostname or "127.0.0.1", upstream.port or 9200))
            threading.Thread(target=_pipe, args=(client, engine, True), daemon=True).start()
            threading.Thread(target=_pipe, args=(engine, client, False), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def test_a_write_whose_bulk_is_never_answered_stops_within_its_grace_and_says_so(
    engine_kind: str, alias: str, embedder: CachedEmbedder, bulk_holding_proxy: str
) -> None:
    settings = load_settings(
        url=bulk_holding_proxy,
        engine=engine_kind,
        index=alias,
        timeout_s=10,
        retries=3,  # the client alone would wait 4 x 10 s for the bulk request
        service={"api_keys": [KEY], "request_timeout_s": 2, "write_cancel_grace_s": 2},
    )
    app = create_app(settings, embedder=embedder, load_model=False)
    with TestClient(app, base_url="http://127.0.0.1:8088") as client:
        began = time.monotonic()
        answer = client.post(
            "/v1/documents", json={"documents": [{"id": "a", "text": "b"}]}, headers={"X-API-Key": KEY}
        )
        took = time.monotonic() - began
        assert answer.status_code == 504, answer.text
        error = answer.json()["error"]
        assert error["kind"] == "timeout", error
        assert "within 2 s (service.request_timeout_s)" in error["message"]
        assert "(service.write_cancel_grace_s)" in error["message"]
        assert "the engine did not answer while it was writing, so part of it may be written" in error["message"]
        assert took < 4.5
        assert "esbridge_writes_running_after_timeout 0.0" in client.get("/metrics").text
