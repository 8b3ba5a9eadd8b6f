"""/readyz with an in-process query model whose calls do not return (``embedding.query_processes = 0``): every
search then answers lexical-only, so it answers 503 naming the model as not answering, as it does for an engine
that does not answer, and ready again once the model answers. Embedded engine; a test double of the model only."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from esbridge.config import load_settings
from esbridge.service.model_probe import PROBE_QUERY
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, ClientFactory


class StuckEmbedder(HashingEmbedder):
    """Every call waits until ``answering`` is set, and counts itself."""

    def __init__(self, answering: threading.Event) -> None:
        self.answering = answering
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.answering.wait(30)
        return super().embed(texts)


@pytest.fixture
def answering() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_readyz_says_the_model_is_not_answering_and_recovers_once_it_answers(
    make_client: ClientFactory, answering: threading.Event
) -> None:
    model = StuckEmbedder(answering)
    settings = load_settings(index="notes", pipeline={"embed_timeout_s": 0.3}, service={"api_keys": [KEY]})
    client = make_client(settings, embedder=model)
    answering.set()
    written = {"documents": [{"id": "sun", "text": "Sunlight warms."}]}
    assert client.post("/v1/documents", json=written, headers={"X-API-Key": KEY}).status_code == 200
    model.calls = 0
    answering.clear()  # the model hangs from here on

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

    answering.set()  # the model answers again
    deadline = time.monotonic() + 5
    while (answer := client.get("/readyz")).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)
    assert answer.json() == {"status": "ready", "checks": {"engine": "ok", "index": "ok", "model": "ok"}}


def test_the_probe_query_is_embedded_as_a_query() -> None:
    assert any(HashingEmbedder().embed([PROBE_QUERY])[0])  # a zero vector would fail every probe
