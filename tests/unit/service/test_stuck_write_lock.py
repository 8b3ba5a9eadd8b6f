"""A write of a document held past its request's time by a model call that does not return: the next write of that
document goes ahead of it, not answering 504 until a restart, and the held write, when its model call returns at
last, writes nothing over the newer one. A write that has begun writing keeps the document until it ends, and a
write that waits for it longer than its own time is told which write it waited for and since when."""

from __future__ import annotations

import threading
import time

import pytest

from esbridge.config import load_settings
from esbridge.service.writes import Cancellation, DocumentLocks, WriteCancelled
from tests.support.held_model import HeldEmbedder
from tests.unit.service.conftest import KEY, ClientFactory

HANG = "glacier"
WRITE = {"X-API-Key": KEY}


def test_a_write_after_one_held_by_the_model_goes_ahead_and_the_held_one_writes_nothing(
    make_client: ClientFactory, released: threading.Event
) -> None:
    service = {"api_keys": [KEY], "request_timeout_s": 2.5, "write_cancel_grace_s": 0.5, "shutdown_timeout_s": 5.0}
    client = make_client(load_settings(index="notes", service=service), embedder=HeldEmbedder(released, hang=HANG))
    warm = {"documents": [{"id": "sun", "text": "Sunlight warms."}]}  # connects and makes the index
    assert client.post("/v1/documents", json=warm, headers=WRITE).status_code == 200
    held = client.post(
        "/v1/documents", json={"documents": [{"id": "ice", "title": "Held", "text": f"A {HANG} moves."}]}, headers=WRITE
    )
    assert held.status_code == 504 and held.json()["error"]["kind"] == "write_still_running", held.text

    newer = client.post(
        "/v1/documents", json={"documents": [{"id": "ice", "title": "Newer", "text": "Sea ice melts."}]}, headers=WRITE
    )
    assert newer.status_code == 200, newer.text
    assert newer.json()["results"][0]["status"] == "ok", newer.text

    released.set()  # the held write's model call returns: it must stop before writing
    deadline = time.monotonic() + 5
    while "esbridge_writes_running_after_timeout 0.0" not in client.get("/metrics").text:
        assert time.monotonic() < deadline, "the held write did not end once its model call returned"
        time.sleep(0.05)
    results = client.post("/v1/search", json={"query": "ice", "top_n": 5}).json()["results"]
    assert [hit["title"] for hit in results if hit["doc_id"] == "ice"] == ["Newer"], results


def test_a_write_that_has_begun_writing_keeps_the_document_and_the_waiter_is_told_since_when() -> None:
    locks, holder, waiter = DocumentLocks(), Cancellation(), Cancellation()
    entered, done = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.held("notes", ["ice"], holder):
            holder.begin("writing")
            entered.set()
            done.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(5)
    holder.cancel()  # timed out while writing: it completes, and keeps the document meanwhile
    waiter.cancel()
    with pytest.raises(WriteCancelled) as stopped, locks.held("notes", ["ice"], waiter):
        pytest.fail("the document was given up by a write that had begun writing")
    done.set()
    thread.join(5)
    message = str(stopped.value)
    assert message.startswith("waiting for an earlier write of the same document 'ice', which has held it since ")
    assert " UTC (" in message and message.endswith("is still running: writing (writing)")


def test_a_write_given_up_to_a_later_one_cannot_begin_writing() -> None:
    locks, holder, later = DocumentLocks(), Cancellation(), Cancellation()
    went_ahead = threading.Event()

    def write_later() -> None:
        with locks.held("notes", ["ice"], later):
            later.begin("writing")
            went_ahead.set()

    with locks.held("notes", ["ice"], holder):
        holder.check("embedding")
        holder.cancel()  # timed out while embedding
        thread = threading.Thread(target=write_later, daemon=True)
        thread.start()
        assert went_ahead.wait(2), "the later write waited for one that timed out before it wrote"
        with pytest.raises(WriteCancelled):
            holder.begin("writing")
    thread.join(2)
    with locks.held("notes", ["ice"], Cancellation()):  # nothing is left held
        pass
