"""A write whose request times out while it embeds stops between embedding steps, within the grace a timed-out
write has, and says how far it got: the steps are sized to take a fraction of that grace."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence

from esbridge.service import documents
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, ClientFactory

PER_TEXT_S = 0.1
RECORDS = [{"id": f"note-{n}", "title": f"Note {n}", "text": f"Heron sighting number {n}."} for n in range(60)]


class PerTextEmbedder(HashingEmbedder):
    """Embedding takes ``PER_TEXT_S`` a text, as a model on a busy CPU: 60 chunks take 6 s."""

    def __init__(self) -> None:
        self.embedded = 0
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(PER_TEXT_S * len(texts))
        with self.lock:
            self.embedded += len(texts)
        return super().embed(texts)


def test_an_upsert_cut_off_while_embedding_stops_within_its_grace_having_written_nothing(
    make_client: ClientFactory,
) -> None:
    embedder = PerTextEmbedder()
    # 4 s leaves a loaded machine time to reach the embedding (CI timed out before the first step at 1 s, and once
    # at 2 s during the whole suite), and is still well short of the 6 s the embedding would take
    client = make_client(embedder=embedder, api_keys=[KEY], request_timeout_s=4.0, write_cancel_grace_s=1.0)
    client.get("/readyz")  # connected before: connecting counts against the request's time
    began = time.monotonic()
    answer = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    took_s = time.monotonic() - began
    assert answer.status_code == 504, answer.text
    error = answer.json()["error"]
    # Before, the 60 texts went to the model in one call of 6 s: still embedding when its grace ended.
    assert error["kind"] == "write_cancelled", error
    assert re.fullmatch(
        r"the upsert did not finish within 4 s \(service.request_timeout_s\) and was stopped before embedding the rest "
        r"\((\d+) of 60 chunks were embedded\): nothing was written; it is safe to send it again",
        error["message"],
    ), error["message"]
    assert took_s < 5.0 + 0.5  # the request's time and its grace, and a moment to answer in
    assert "esbridge_writes_running_after_timeout 0.0" in client.get("/metrics").text
    assert embedder.embedded < len(RECORDS)
    found = client.post("/v1/search", json={"query": "heron sighting"})
    assert found.status_code == 200 and found.json()["results"] == []


def test_embedding_steps_take_a_quarter_of_the_grace_within_bounds() -> None:
    step, largest = documents._next_step, documents._EMBED_STEP
    assert step(4, 0.4, grace_s=2.0) == 5  # 0.1 s a text, 0.5 s a step
    assert step(16, 0.08, grace_s=2.0) == largest  # a fast model: the largest step
    assert step(4, 0.0, grace_s=2.0) == largest  # cached vectors take no time
    assert step(2, 3.0, grace_s=2.0) == 1  # one text is the least
    assert step(10, 1.0, grace_s=0.0) == 1  # no grace: steps of at least 0.1 s
