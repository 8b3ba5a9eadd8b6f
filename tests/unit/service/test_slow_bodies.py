"""Clients that send a body slowly, or never finish it (slowloris): they hold no slot of the concurrency gate
while their body arrives, and a body not received within ``service.request_timeout_s`` is answered 408."""

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
    b"POST /v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
)


@contextmanager
def unfinished_bodies(url: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that send their headers and the first byte of a 1,000-byte body, and no more."""
    where = urlsplit(url)
    assert where.port is not None
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection((where.hostname, where.port)))
            sock.sendall(UNFINISHED)
            sockets.append(sock)
        yield sockets


def test_unfinished_bodies_hold_no_slot_and_are_answered_408() -> None:
    settings = service_settings(api_keys=["k"], request_timeout_s=2, max_concurrency=2, max_queue=2)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 6) as sockets:
        time.sleep(0.3)
        answer = httpx.post(f"{url}/v1/search", json={"query": "solar"}, timeout=10)
        assert answer.json()["error"]["kind"] == "index_missing", answer.text  # served, not refused as overloaded
        for sock in sockets:
            sock.settimeout(10)
            began = time.monotonic()
            status_line = sock.recv(4096).split(b"\r\n", 1)[0]
            assert status_line == b"HTTP/1.1 408 Request Timeout", status_line
            assert time.monotonic() - began < 4
