"""Clients that send a body slowly, or never finish it (slowloris): they hold no slot of the concurrency gate
while their body arrives, a body not received within ``service.request_timeout_s`` is answered 408, and the
bodies arriving at once are capped per accepted key (else per client address) and in all (429 beyond)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import urlsplit

import httpx

from esbridge.service.app import create_app
from tests.support.hashing import HashingEmbedder
from tests.support.serving import uvicorn_thread
from tests.unit.service.conftest import service_settings

UNFINISHED = (
    b"POST /v1/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
)


@contextmanager
def unfinished_bodies(
    url: str, count: int, source: str = "127.0.0.1", key: str | None = None
) -> Iterator[list[socket.socket]]:
    """``count`` connections from ``source`` (presenting ``key``, if given) that send their headers and the first
    byte of a 1,000-byte body, and no more."""
    request = UNFINISHED if key is None else UNFINISHED.replace(b"\r\n\r\n", f"\r\nX-API-Key: {key}\r\n\r\n".encode())
    where = urlsplit(url)
    assert where.port is not None
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(
                socket.create_connection((where.hostname, where.port), source_address=(source, 0))
            )
            sock.sendall(request)
            sockets.append(sock)
        yield sockets


def status_of(sock: socket.socket) -> tuple[bytes, bytes]:
    """The status line and the whole answer (the server closes the connection after it)."""
    sock.settimeout(10)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer.split(b"\r\n", 1)[0], answer


def search_from(url: str, source: str, key: str | None = None) -> httpx.Response:
    headers = {} if key is None else {"X-API-Key": key}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10, headers=headers) as client:
        return client.post(f"{url}/v1/search", json={"query": "solar"})


def test_unfinished_bodies_hold_no_slot_and_are_answered_408() -> None:
    settings = service_settings(api_keys=["k"], request_timeout_s=2, max_concurrency=2, max_queue=2)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 16) as sockets:
        time.sleep(0.3)
        answer = search_from(url, "127.0.0.2")
        assert answer.json()["error"]["kind"] == "index_missing", answer.text  # served, not refused as overloaded
        for sock in sockets:
            began = time.monotonic()
            assert status_of(sock)[0] == b"HTTP/1.1 408 Request Timeout"
            assert time.monotonic() - began < 4


def test_a_client_address_with_too_many_bodies_arriving_locks_out_only_itself() -> None:
    settings = service_settings(api_keys=["k"], request_timeout_s=5, max_concurrency=2, max_queue=2)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 16):
        with unfinished_bodies(url, 1) as (one_more,):
            status, answer = status_of(one_more)
            assert status == b"HTTP/1.1 429 Too Many Requests"
            assert b"too_many_bodies" in answer and b"from this client address (at most 16)" in answer
        assert search_from(url, "127.0.0.2").json()["error"]["kind"] == "index_missing"
        assert search_from(url, "127.0.0.1").status_code == 429
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200


def test_bodies_with_an_accepted_key_are_counted_under_the_key_not_the_address() -> None:
    """On loopback every client has one address: unkeyed (or wrongly keyed) bodies there must not lock out
    keyed clients, and a key's own bodies are capped under the key."""
    settings = service_settings(
        api_keys=["s3cret-one", "s3cret-two"], request_timeout_s=5, max_concurrency=2, max_queue=2
    )
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 8), unfinished_bodies(url, 8, key="wrong"):
        time.sleep(0.3)
        assert search_from(url, "127.0.0.1").status_code == 429
        assert search_from(url, "127.0.0.1", key="s3cret-one").json()["error"]["kind"] == "index_missing"
        with unfinished_bodies(url, 16, key="s3cret-one"):
            time.sleep(0.3)
            refused = search_from(url, "127.0.0.1", key="s3cret-one")
            assert refused.status_code == 429, refused.text
            message = refused.json()["error"]["message"]
            assert "for this API key (at most 16)" in message and "s3cret" not in refused.text
            assert search_from(url, "127.0.0.1", key="s3cret-two").json()["error"]["kind"] == "index_missing"


def test_bodies_arriving_at_once_are_capped_in_all() -> None:
    """Four times a client's share, whatever the addresses: the bodies waiting bound the memory they take."""
    settings = service_settings(api_keys=["k"], request_timeout_s=5, max_concurrency=1, max_queue=1)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), ExitStack() as stack:
        for n in range(4):
            stack.enter_context(unfinished_bodies(url, 8, source=f"127.0.1.{n + 1}"))
        time.sleep(0.3)
        answer = search_from(url, "127.0.2.1")
        assert answer.status_code == 429, answer.text
        assert "in all (at most 32)" in answer.json()["error"]["message"]


def test_a_client_that_closes_before_its_body_is_in_is_counted_as_499_not_as_a_server_error() -> None:
    settings = service_settings(api_keys=["k"], request_timeout_s=5)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url):
        with unfinished_bodies(url, 3):
            time.sleep(0.3)
        time.sleep(0.3)  # the service has seen them go
        metrics = httpx.get(f"{url}/metrics", timeout=10).text
    closed = 'esbridge_http_request_duration_seconds_count{method="POST",route="unmatched",status="499"} 3.0'
    assert closed in metrics
    assert 'status="500"' not in metrics


def test_bodies_refused_as_too_many_are_counted_as_rejections_like_every_429() -> None:
    settings = service_settings(api_keys=["k"], request_timeout_s=5, max_concurrency=2, max_queue=2)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 16):
        time.sleep(0.3)  # the 16 bodies this address may have arriving are all being read
        with unfinished_bodies(url, 3) as over:
            statuses = [status_of(sock)[0] for sock in over]
        refused = statuses.count(b"HTTP/1.1 429 Too Many Requests")
        metrics = httpx.get(f"{url}/metrics", timeout=10).text.splitlines()
    assert refused == 3, statuses
    # docs/service.md#metrics: every 429 is a rejection by reason, and an error answer by kind
    assert f'esbridge_rejections_total{{reason="too_many_bodies"}} {float(refused)}' in metrics
    assert f'esbridge_errors_total{{kind="too_many_bodies"}} {float(refused)}' in metrics
