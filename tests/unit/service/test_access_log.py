"""Request ids echoed in answers, and one JSON access log line per request: no keys, no query unless asked."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from esbridge.service.app import create_app, server_config
from esbridge.service.metrics import request_id
from tests.support.hashing import HashingEmbedder
from tests.support.serving import free_port, running
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings

SECRET_QUERY = "sourdough starter confidential-words"


def lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(record.getMessage()) for record in caplog.records if record.name == "esbridge.access"]


def test_a_request_id_is_echoed_and_logged_with_route_status_latency_and_mode(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="esbridge.access")
    answer = client.post(
        "/v1/search", json={"query": SECRET_QUERY}, headers={"X-Request-ID": "req-42", "X-API-Key": KEY}
    )
    assert answer.status_code == 200
    assert answer.headers["X-Request-ID"] == "req-42"
    [entry] = lines(caplog)
    assert set(entry) == {
        "ts",
        "request_id",
        "method",
        "route",
        "status",
        "latency_ms",
        "search_mode",
        "error",
        "client",
    }
    assert entry["request_id"] == "req-42"
    assert (entry["method"], entry["route"], entry["status"]) == ("POST", "/v1/search", 200)
    assert entry["search_mode"] == "hybrid"
    assert entry["error"] is None
    assert 0 < entry["latency_ms"] < 10_000
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["ts"])
    assert "sourdough" not in caplog.text and KEY not in caplog.text


def test_errors_and_refusals_are_logged_with_their_kind_and_a_fresh_id(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="esbridge.access")
    client = make_client(api_keys=[KEY], rate_limit_per_s=0.001, rate_limit_burst=1)
    headers = {"X-API-Key": KEY + "-wrong", "X-Request-ID": "bad id\nwith a newline"}
    first = client.post("/v1/documents", json={"documents": RECORDS}, headers=headers)
    second = client.delete("/v1/documents/x/y", headers=headers)
    assert (first.status_code, second.status_code) == (401, 429)
    for answer in (first, second):
        assert re.fullmatch(r"[0-9a-f]{32}", answer.headers["X-Request-ID"])
    entries = lines(caplog)
    assert [(e["route"], e["status"], e["error"]) for e in entries] == [
        ("/v1/documents", 401, "unauthorized"),
        ("unmatched", 429, "rate_limited"),  # refused before routing
    ]
    assert [e["request_id"] for e in entries] == [first.headers["X-Request-ID"], second.headers["X-Request-ID"]]
    assert KEY not in caplog.text


def test_the_query_is_logged_only_when_enabled(make_client: ClientFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="esbridge.access")
    client = make_client(api_keys=[KEY], log_queries=True)
    client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    client.post("/v1/search", json={"query": SECRET_QUERY})
    assert lines(caplog)[-1]["query"] == SECRET_QUERY
    quiet = make_client(api_keys=[KEY], access_log=False)
    caplog.clear()
    quiet.get("/healthz")
    assert lines(caplog) == []


def test_request_ids_are_plain_bounded_tokens() -> None:
    assert request_id(b"a.b:c-d_9") == "a.b:c-d_9"
    for refused in (b"", b"x" * 129, b"has space", b'{"json": 1}', "caf\u00e9".encode()):
        assert re.fullmatch(r"[0-9a-f]{32}", request_id(refused)), refused
    assert request_id(None) != request_id(None)


@pytest.mark.parametrize("enabled", [True, False])
def test_uvicorn_logs_no_raw_paths_whether_or_not_the_access_log_is_on(
    enabled: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = service_settings(api_keys=[KEY], access_log=enabled, port=free_port())
    app = create_app(settings, embedder=HashingEmbedder(), load_model=False)
    with running(server_config(app, settings, log_level="info")):
        url = f"http://127.0.0.1:{settings.service.port}"
        answer = httpx.delete(f"{url}/v1/documents/private-note?token=abc", headers={"X-API-Key": KEY})
    assert answer.json()["error"]["kind"] == "index_missing"  # answered: nothing was written yet
    printed = capfd.readouterr()
    assert "private-note" not in printed.out + printed.err
