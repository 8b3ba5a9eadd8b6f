"""Engine URLs that lead nowhere useful. One that accepts connections and never answers (a hung node, a
black-holing proxy): every route answers within its own time limit, however long the engine client's timeouts
and retries would wait. One that answers 404 to everything: a fault of the deployment, not of the request."""

from __future__ import annotations

import http.server
import threading
import time

import pytest
from fastapi.testclient import TestClient

from esbridge.config import load_settings
from tests.unit.service.conftest import KEY, ClientFactory

WRITE = {"X-API-Key": KEY}


@pytest.fixture
def client(make_client: ClientFactory, silent_url: str) -> TestClient:
    # The engine client would wait 2 x 4 s; the kind is detected on the first request, as with --url alone.
    settings = load_settings(
        url=silent_url, retries=1, timeout_s=4, index="notes", service={"api_keys": [KEY], "request_timeout_s": 1}
    )
    return make_client(settings)


def test_writes_answer_504_within_the_request_timeout(client: TestClient) -> None:
    upsert = {"documents": [{"id": "a", "text": "b"}]}
    for method, path, body in (("POST", "/v1/documents", upsert), ("DELETE", "/v1/documents/a", None)):
        began = time.monotonic()
        answer = client.request(method, path, json=body, headers=WRITE)
        assert time.monotonic() - began < 3.5  # 1 s, and the 2 s a stopping write is given
        assert answer.status_code == 504, answer.text


def test_a_write_to_a_hung_engine_stops_at_the_request_timeout_and_says_so(
    make_client: ClientFactory, silent_url: str
) -> None:
    """The engine's kind is given, so the write reaches the worker thread, whose engine calls the client alone would
    wait 4 x 5 s for: they end at the request's deadline, nothing written, the worker ended. The grace is long, so
    that a write which waited it out (instead of stopping at the deadline) is told apart from one the machine stalled
    for a second or two."""
    settings = load_settings(
        url=silent_url,
        engine="opensearch",
        retries=3,
        timeout_s=5,
        index="notes",
        service={"api_keys": [KEY], "request_timeout_s": 1, "write_cancel_grace_s": 8},
    )
    client = make_client(settings)
    upsert = {"documents": [{"id": "a", "text": "b"}]}
    for method, path, body in (("POST", "/v1/documents", upsert), ("DELETE", "/v1/documents/a", None)):
        began = time.monotonic()
        answer = client.request(method, path, json=body, headers=WRITE)
        assert time.monotonic() - began < 5, answer.text  # 1 s, not 1 s and the 8 s of grace
        assert answer.status_code == 504, answer.text
        error = answer.json()["error"]
        assert error["kind"] == "write_cancelled"
        assert "within 1 s (service.request_timeout_s)" in error["message"]
        assert "the engine did not answer in time" in error["message"]
        assert "nothing was written" in error["message"]
    assert "esbridge_writes_running_after_timeout 0.0" in client.get("/metrics").text


def test_readyz_answers_not_ready_within_its_five_seconds(client: TestClient) -> None:
    began = time.monotonic()
    answer = client.get("/readyz")
    assert time.monotonic() - began < 7
    assert answer.status_code == 503
    assert answer.json()["checks"]["engine"] == "no answer within 5s"


def test_a_search_no_retriever_answers_in_time_is_504_timeout(make_client: ClientFactory, silent_url: str) -> None:
    """A hung engine, told apart from one that refuses connections (503 engine_unavailable with Retry-After)."""
    settings = load_settings(
        url=silent_url,
        engine="opensearch",
        retries=0,
        timeout_s=2,
        index="notes",
        pipeline={"bm25_timeout_s": 0.3, "knn_timeout_s": 0.3},
        service={"request_timeout_s": 10},
    )
    answer = make_client(settings).post("/v1/search", json={"query": "anything"})
    assert answer.status_code == 504, answer.text
    error = answer.json()["error"]
    assert error["kind"] == "timeout"
    assert "bm25 did not answer within 0.3s; knn did not answer within 0.3s" in error["message"]
    assert "Retry-After" not in answer.headers


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_url_that_is_not_an_engine_is_a_502_not_the_callers_fault(make_client: ClientFactory) -> None:
    """A proxy path or port that answers 404 to everything: the engine cannot even be identified."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        client = make_client(load_settings(url=url, retries=0, index="notes", service={"api_keys": [KEY]}))
        searched = client.post("/v1/search", json={"query": "anything"})
        written = client.post("/v1/documents", json={"documents": [{"id": "a"}]}, headers=WRITE)
    finally:
        server.shutdown()
        server.server_close()
    for answer in (searched, written):
        assert answer.status_code == 502, answer.text
        assert answer.json()["error"]["kind"] == "engine_error"
        assert "HTTP 404" in answer.json()["error"]["message"]
