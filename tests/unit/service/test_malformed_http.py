"""A request uvicorn cannot parse as HTTP is answered 400 in the service's JSON error shape, as every other error."""

from __future__ import annotations

import json
import socket

import pytest

from esbridge.service.app import create_app, server_config
from tests.support.hashing import HashingEmbedder
from tests.support.serving import free_port, running
from tests.unit.service.conftest import service_settings


def raw_answer(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nbad header line\r\n\r\n",
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    ],
)
def test_malformed_http_gets_a_json_400(data: bytes) -> None:
    settings = service_settings(port=free_port(), access_log=False)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with running(server_config(app, settings, log_level="critical")):
        answer = raw_answer(settings.service.port, data)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 400")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    assert len(headers["x-request-id"]) == 32
    assert (headers["cache-control"], headers["x-content-type-options"]) == ("no-store", "nosniff")
    assert json.loads(body) == {
        "error": {"kind": "bad_request", "message": "the request is not valid HTTP", "fields": []}
    }


def test_a_request_with_both_content_length_and_transfer_encoding_is_refused_and_what_follows_is_not_read() -> None:
    """A proxy reading Content-Length would pass the GET after the chunked body on as a request of its own."""
    settings = service_settings(port=free_port(), access_log=False)
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    smuggled = (
        b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    with running(server_config(app, settings, log_level="critical")):
        answer = raw_answer(settings.service.port, smuggled)
    assert answer.count(b"HTTP/1.1 ") == 1, answer  # one answer: the GET after it was never read
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"connection: close" in head.lower()
    assert json.loads(body)["error"] == {
        "kind": "bad_request",
        "message": "the request has both Content-Length and Transfer-Encoding, which may be read two ways: send one",
        "fields": [],
    }
