"""One client address may hold ``service.max_connections_per_client`` connections open at once, over the server
``esbridge serve`` runs: beyond that it is answered 429 at once, and other addresses are still served."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx

from esbridge.config.service import ServiceSettings
from esbridge.service.app import create_app, server_config
from tests.support.hashing import HashingEmbedder
from tests.support.serving import free_port, running
from tests.unit.service.conftest import KEY, service_settings


@contextmanager
def served(**service: object) -> Iterator[int]:
    settings = service_settings(api_keys=[KEY], port=free_port(), request_timeout_s=5.0, access_log=False, **service)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with running(server_config(app, settings, log_level="warning")):
        yield settings.service.port


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def answer_to(sock: socket.socket) -> tuple[str, dict[str, str], dict[str, object]]:
    """The status line, headers and JSON body of the answer to a GET /healthz sent over ``sock``."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        received = sock.recv(65536)
        assert received, f"closed without an answer, after {data!r}"
        data += received
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return status, headers, json.loads(body)


def test_an_address_over_its_connections_is_answered_429_and_others_are_served() -> None:
    with served(max_connections_per_client=2) as port, ExitStack() as stack:
        held = [stack.enter_context(connect(port)) for _ in range(2)]
        assert all(answer_to(sock)[0] == "HTTP/1.1 200 OK" for sock in held)  # kept alive: both stay open
        status, headers, body = answer_to(stack.enter_context(connect(port)))
        assert status == "HTTP/1.1 429 Too Many Requests"
        assert (headers["retry-after"], headers["connection"]) == ("1", "close")
        assert body["error"]["kind"] == "too_many_connections"  # type: ignore[index]
        assert "(service.max_connections_per_client)" in body["error"]["message"]  # type: ignore[index]
        assert answer_to(stack.enter_context(connect(port, source="127.0.0.2")))[0] == "HTTP/1.1 200 OK"
        held.pop().close()
        deadline, refused = time.monotonic() + 10, 1
        while (status := answer_to(stack.enter_context(connect(port)))[0]) != "HTTP/1.1 200 OK":
            assert time.monotonic() < deadline, f"a slot never came back: {status}"
            refused += 1
            time.sleep(0.05)
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2")) as other:
            metrics = other.get(f"http://127.0.0.1:{port}/metrics").text
    # Counted as every other refusal: a rejection by reason and an error answer by kind (docs/service.md#metrics).
    lines = metrics.splitlines()
    assert f'esbridge_rejections_total{{reason="too_many_connections"}} {float(refused)}' in lines
    assert f'esbridge_errors_total{{kind="too_many_connections"}} {float(refused)}' in lines


def test_the_default_cap_follows_the_requests_the_service_runs_and_queues() -> None:
    assert ServiceSettings().connections_per_client == 48  # 4 x (4 + 8), as bodies arriving at once per client
    assert ServiceSettings(max_concurrency=2, max_queue=3).connections_per_client == 20
    assert ServiceSettings(max_connections_per_client=500).connections_per_client == 500
