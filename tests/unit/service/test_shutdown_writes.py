"""A write that answered 504 ``write_still_running`` and is still writing when the service stops: the engine is
closed only after it ends, so it completes as its answer promised ("either stops before it writes or, if it
already has, completes") rather than failing half-written on a closed engine."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from esbridge.config import Settings
from esbridge.engines.base import BulkAction, BulkResult
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.service import backend
from tests.unit.service.conftest import KEY, ClientFactory, service_settings

WRITE = {"X-API-Key": KEY}


class PausingBulk(EmbeddedEngine):
    """The real embedded engine; a bulk write waits for ``release`` once ``pause`` is set."""

    pause = threading.Event()
    release = threading.Event()

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        if self.pause.is_set():
            self.release.wait(10)
        return super().bulk(index, actions)


def test_a_write_still_running_at_shutdown_completes_before_the_engine_closes(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def connect(settings: Settings) -> EmbeddedEngine:
        return PausingBulk.from_settings(settings)

    monkeypatch.setattr(backend, "connect", connect)
    settings = service_settings(api_keys=[KEY], request_timeout_s=2.0, write_cancel_grace_s=0)
    client = make_client(settings)
    client.get("/readyz")  # connected before: on a loaded machine connecting could take much of the first write's 2 s
    first = {"documents": [{"id": "first", "text": "Written before the pause."}]}
    assert client.post("/v1/documents", json=first, headers=WRITE).status_code == 200
    PausingBulk.pause.set()
    late = {"documents": [{"id": "late", "text": "Written while the service stops."}]}
    answer = client.post("/v1/documents", json=late, headers=WRITE)
    assert answer.json()["error"]["kind"] == "write_still_running", answer.text
    threading.Timer(0.5, PausingBulk.release.set).start()
    client.__exit__(None, None, None)  # the service stops while the write waits to be released
    PausingBulk.pause.clear()

    after = make_client(service_settings(api_keys=[KEY]))
    found = after.post("/v1/search", json={"query": "written", "top_n": 10}).json()
    assert "results" in found, found
    assert {hit["doc_id"] for hit in found["results"]} == {"first", "late"}
