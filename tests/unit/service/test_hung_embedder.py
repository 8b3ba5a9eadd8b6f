"""The sidecar with an in-process embedding model whose call never returns (``embedding.query_processes = 0``):
each search answers lexical-only when the query's embedding time is up, saying so; searches after more hung
calls than the loop has worker threads still answer; a write held by such a call answers 504; and the service
shuts down without waiting for the model past ``service.shutdown_timeout_s``. Embedded engine; a test double of
the model only."""

from __future__ import annotations

import threading
import time

from esbridge.config import load_settings
from tests.support.held_model import HeldEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory

HANG = "glacier"
HUNG_SEARCHES = 8  # more than the loop's default executor has threads on a small machine (cores + 4)


def test_searches_go_on_past_hung_model_calls_and_the_service_stops_without_them(
    make_client: ClientFactory, released: threading.Event
) -> None:
    settings = load_settings(
        index="notes", pipeline={"embed_timeout_s": 0.2}, service={"api_keys": [KEY], "request_timeout_s": 5.0}
    )
    client = make_client(settings, embedder=HeldEmbedder(released, hang=HANG, wait_s=60))
    written = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert written.status_code == 200, written.text

    for _ in range(HUNG_SEARCHES):
        answer = client.post("/v1/search", json={"query": f"sunlight {HANG}"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["search_mode"] == "lexical-only"
        assert "the query was not embedded within 0.2s" in answer.json()["warnings"]
    began = time.monotonic()
    after = client.post("/v1/search", json={"query": "sunlight"})
    assert after.status_code == 200, after.text
    assert after.json()["search_mode"] == "hybrid" and after.json()["results"][0]["id"].startswith("solar#")
    assert time.monotonic() - began < 2

    stopping = threading.Thread(target=client.__exit__, args=(None, None, None), daemon=True)
    stopping.start()
    stopping.join(5)
    assert not stopping.is_alive(), "the service's shutdown waited for the hung model calls"


def test_a_write_held_by_a_hung_model_call_answers_504_and_the_shutdown_waits_only_its_timeout(
    make_client: ClientFactory, released: threading.Event
) -> None:
    service = {"api_keys": [KEY], "request_timeout_s": 1.0, "write_cancel_grace_s": 0.5, "shutdown_timeout_s": 1.0}
    client = make_client(
        load_settings(index="notes", service=service), embedder=HeldEmbedder(released, hang=HANG, wait_s=60)
    )
    record = {"id": "ice", "title": "Ice", "text": f"A {HANG} moves slowly."}
    held = client.post("/v1/documents", json={"documents": [record]}, headers={"X-API-Key": KEY})
    assert held.status_code == 504, held.text
    assert held.json()["error"]["kind"] == "write_still_running"

    stopping = threading.Thread(target=client.__exit__, args=(None, None, None), daemon=True)
    began = time.monotonic()
    stopping.start()
    stopping.join(5)
    assert not stopping.is_alive(), "the service's shutdown waited for the hung write past its timeout"
    assert time.monotonic() - began >= 0.9  # it did wait service.shutdown_timeout_s for the write
