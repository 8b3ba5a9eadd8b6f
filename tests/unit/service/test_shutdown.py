"""Graceful shutdown under a real uvicorn: a request in flight when the stop comes still gets its answer."""

from __future__ import annotations

import threading
import time

import httpx

from esbridge.service.app import create_app, server_config
from tests.support.serving import uvicorn_thread
from tests.unit.service.conftest import KEY, RECORDS, SlowEmbedder, service_settings


def test_a_request_in_flight_finishes_after_the_stop_signal() -> None:
    embedder = SlowEmbedder(0.0)
    app = create_app(service_settings(api_keys=[KEY]), embedder=embedder, load_model=False)
    answers: list[httpx.Response] = []
    with uvicorn_thread(app, timeout_graceful_shutdown=10) as (server, url):
        written = httpx.post(f"{url}/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
        assert written.status_code == 200
        embedder.delay_s = 1.5  # the next search spends 1.5 s embedding its query

        def slow_search() -> None:
            answers.append(httpx.post(f"{url}/v1/search", json={"query": "sourdough"}, timeout=30))

        client = threading.Thread(target=slow_search)
        client.start()
        time.sleep(0.5)
        stopped_at = time.monotonic()
        server.should_exit = True
        client.join(timeout=30)
        assert time.monotonic() - stopped_at >= 0.5  # it waited for the request
        refused = None
        try:
            httpx.get(f"{url}/healthz", timeout=2)
        except httpx.TransportError as exc:
            refused = exc
        assert refused is not None  # no new requests after the stop
    assert len(answers) == 1
    assert answers[0].status_code == 200
    assert answers[0].json()["results"][0]["doc_id"] == "bread"


def test_a_grace_under_a_second_is_not_rounded_down_to_none() -> None:
    """Uvicorn takes whole seconds; 0 would cancel every request in flight at once."""
    settings = service_settings(shutdown_timeout_s=0.5)
    config = server_config(create_app(settings, embedder=SlowEmbedder(0.0), load_model=False), settings)
    assert config.timeout_graceful_shutdown == 1
