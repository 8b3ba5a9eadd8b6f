"""Clients that send a request's headers slowly, or nothing at all, over the server ``esbridge serve`` runs: the
connection is closed once ``service.request_timeout_s`` has passed without all the headers, so such clients
cannot hold connections (and file descriptors) without bound. Requests whose headers arrived are not cut."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from esbridge.embeddings.base import Embedder
from esbridge.service.app import create_app, server_config
from tests.support.hashing import HashingEmbedder
from tests.support.serving import free_port, running
from tests.unit.service.conftest import KEY, SlowEmbedder, service_settings

TIMEOUT_S = 1.0


@contextmanager
def served(embedder: Embedder | None = None, **service: object) -> Iterator[int]:
    settings = service_settings(
        api_keys=[KEY], port=free_port(), request_timeout_s=TIMEOUT_S, access_log=False, **service
    )
    app = create_app(settings, embedder=embedder or HashingEmbedder(), load_model=False)
    with running(server_config(app, settings, log_level="warning")):
        yield settings.service.port


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> float | None:
    """Seconds until the server closed ``sock`` (sending ``trickle`` every 0.2 s meanwhile), None if it did not."""
    began = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - began < seconds:
        try:
            if trickle:
                sock.sendall(trickle)
            if sock.recv(65536) == b"":
                return time.monotonic() - began
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - began
    return None


def test_a_connection_that_sends_nothing_is_closed_after_the_request_timeout() -> None:
    with served() as port, socket.create_connection(("127.0.0.1", port)) as silent:
        waited = closed_within(silent, 10 * TIMEOUT_S)
    assert waited is not None and waited >= TIMEOUT_S * 0.9


def test_headers_sent_a_few_bytes_at_a_time_are_cut_off() -> None:
    with served() as port, socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        waited = closed_within(slow, 10 * TIMEOUT_S, trickle=b"X-A: b\r\n")
    assert waited is not None and waited < 5 * TIMEOUT_S


def test_a_request_answered_after_the_header_deadline_is_not_cut_and_its_connection_stays_usable() -> None:
    body = b'{"documents": [{"id": "n1", "text": "Sourdough starter."}]}'
    request = (
        b"POST /v1/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-API-Key: %s\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (KEY.encode(), len(body), body)
    )
    # Each write embeds for 1.5 s, past the 1 s its headers had; it is answered (504 write_cancelled, within the
    # grace a timed-out write has) over the connection, which then takes the next request.
    with served(SlowEmbedder(1.5), write_cancel_grace_s=5) as port:
        # Ready first (/readyz embeds a probe query, 1.5 s here: an idle connection opened before it would be cut at
        # its header deadline), then connected before the timed requests: on a loaded machine connecting alone took
        # the 1 s, answered 504 "timeout" instead.
        assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30).status_code in (200, 503)
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.settimeout(10)
            for _ in range(2):
                began = time.monotonic()
                conn.sendall(request)
                answer = b""
                while not answer.endswith(b"}}"):  # the JSON error body's end
                    part = conn.recv(65536)
                    assert part, ("the connection was closed", answer[:300])
                    answer += part
                assert time.monotonic() - began > TIMEOUT_S
                assert answer.startswith(b"HTTP/1.1 504 "), answer[:300]
                assert b'"write_cancelled"' in answer
                time.sleep(0.5)
