"""/readyz tells a caller who may not search only whether the service is ready; its checks' reasons, which name
the engine's URL, the index and the model, go to callers who may search."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from esbridge.config import load_settings
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory

READER, WRITER = "reader-key-0123456789", "writer-key-0123456789"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    path = tmp_path / "keys"
    path.write_text(f"{READER} read\n{WRITER} write\n", encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_without_a_read_key_readyz_says_ready_or_not_and_nothing_of_the_engine(
    make_client: ClientFactory, keys: Path, method: str
) -> None:
    port = closed_port()
    service = {"api_keys_file": keys, "require_key_for_reads": True}
    settings = load_settings(
        url=f"http://127.0.0.1:{port}",
        engine="opensearch",
        retries=0,
        timeout_s=2,
        index="secret-notes",
        service=service,
    )
    client = make_client(settings)
    for headers in ({}, {"X-API-Key": "not-a-key"}, {"X-API-Key": WRITER}):
        answer = client.request(method, "/readyz", headers=headers)
        assert answer.status_code == 503, headers
        if method == "GET":
            assert answer.json() == {
                "status": "not ready",
                "checks": {"engine": "not ok", "index": "not ok", "model": "ok"},
            }, headers
            assert str(port) not in answer.text and "secret-notes" not in answer.text
    detailed = client.get("/readyz", headers={"Authorization": f"Bearer {READER}"})
    assert detailed.status_code == 503
    assert f"127.0.0.1:{port}" in detailed.json()["checks"]["engine"]


def test_a_ready_service_answers_200_to_every_caller(make_client: ClientFactory, keys: Path) -> None:
    client = make_client(api_keys=[KEY], api_keys_file=keys, require_key_for_reads=True)
    assert client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).status_code == 200
    ready = {"status": "ready", "checks": {"engine": "ok", "index": "ok", "model": "ok"}}
    assert (client.get("/readyz").status_code, client.get("/readyz").json()) == (200, ready)
    assert client.get("/readyz", headers={"X-API-Key": READER}).json() == ready


def test_where_searches_are_open_readyz_gives_its_reasons_to_everyone(make_client: ClientFactory) -> None:
    """A search's own 503 names the engine there, so the probe hides nothing by leaving it out."""
    client = make_client(api_keys=[KEY])
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert "no such index" in answer.json()["checks"]["index"]
