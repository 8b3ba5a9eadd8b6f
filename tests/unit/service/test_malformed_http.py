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
    assert json.loads(body) == {
        "error": {"kind": "bad_request", "message": "the request is not valid HTTP", "fields": []}
    }
