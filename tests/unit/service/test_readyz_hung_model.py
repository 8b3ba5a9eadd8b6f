"""/readyz with an in-process query model whose calls do not return (``embedding.query_processes = 0``): every
search then answers lexical-only, so it answers 503 naming the model as not answering, as it does for an engine
that does not answer, and ready again once the model answers. Embedded engine; a test double of the model only."""

from __future__ import annotations

import threading
import time

from esbridge.config import load_settings
from esbridge.service.model_probe import PROBE_QUERY
from tests.support.hashing import HashingEmbedder
from tests.support.held_model import HeldEmbedder
from tests.unit.service.conftest import KEY, ClientFactory


def test_readyz_says_the_model_is_not_answering_and_recovers_once_it_answers(
    make_client: ClientFactory, released: threading.Event
) -> None:
    model = HeldEmbedder(released)
    settings = load_settings(index="notes", pipeline={"embed_timeout_s": 0.3}, service={"api_keys": [KEY]})
    client = make_client(settings, embedder=model)
    released.set()
    written = {"documents": [{"id": "sun", "text": "Sunlight warms."}]}
    assert client.post("/v1/documents", json=written, headers={"X-API-Key": KEY}).status_code == 200
    model.calls = 0
    released.clear()  # the model hangs from here on

    for _ in range(3):
        began = time.monotonic()
        answer = client.get("/readyz")
        assert time.monotonic() - began < 2
        assert answer.status_code == 503, answer.text
        health = answer.json()
        assert health["status"] == "not ready"
        assert health["checks"]["engine"] == "ok" and health["checks"]["index"] == "ok"
        assert health["checks"]["model"].startswith("not answering: a query embedding has not returned in ")
        assert "(pipeline.embed_timeout_s = 0.3 s;" in health["checks"]["model"]
    assert client.head("/readyz").status_code == 503
    assert model.calls == 1, "each probe left another model call hanging"

    released.set()  # the model answers again
    deadline = time.monotonic() + 5
    while (answer := client.get("/readyz")).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)
    assert answer.json() == {"status": "ready", "checks": {"engine": "ok", "index": "ok", "model": "ok"}}


def test_the_probe_query_is_embedded_as_a_query() -> None:
    assert any(HashingEmbedder().embed([PROBE_QUERY])[0])  # a zero vector would fail every probe
