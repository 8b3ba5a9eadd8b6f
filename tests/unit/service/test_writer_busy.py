"""Another process holding the embedded data directory's writer lock (an `esbridge ingest`, a second sidecar):
the sidecar's delete is refused as a passing state of the engine, 503 with Retry-After, naming that process."""

from __future__ import annotations

from esbridge.config import load_settings
from tests.support.writer_lock import another_writer
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings

WRITE = {"X-API-Key": KEY}


def test_a_delete_while_another_process_writes_is_503_naming_it(make_client: ClientFactory) -> None:
    first = make_client(api_keys=[KEY])
    assert first.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE).status_code == 200
    first.__exit__(None, None, None)  # closes the engine: its writer lock is free again
    data_dir = str(load_settings().data_dir)
    with another_writer(data_dir) as pid:
        answer = make_client(service_settings(api_keys=[KEY], retry_after_s=7)).delete(
            "/v1/documents/solar", headers=WRITE
        )
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "7"
    error = answer.json()["error"]
    assert error["kind"] == "engine_unavailable"
    assert f"another process (pid {pid})" in error["message"]
