"""The embedded sidecar whose data directory is removed (or moved away) while it runs: readiness and writes say
so by name with a 503, searches answer from what is open, and all of it recovers once the directory is back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.unit.service.conftest import KEY, ClientFactory

WRITE = {"X-API-Key": KEY}


def test_a_removed_data_directory_is_503_naming_it_and_recovers_when_it_is_back(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE)
    assert written.json()["written"] == 1
    assert client.get("/readyz").status_code == 200
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"])
    away = data_dir.with_name(data_dir.name + ".away")
    shutil.move(data_dir, away)
    try:
        ready = client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert f"the data directory {data_dir} has no database" in ready.json()["checks"]["engine"]
        for answer in (
            client.post("/v1/documents", json={"documents": [{"id": "b", "text": "heron"}]}, headers=WRITE),
            client.delete("/v1/documents/a", headers=WRITE),
        ):
            assert answer.status_code == 503, answer.text
            error = answer.json()["error"]
            assert error["kind"] == "engine_unavailable"
            assert f"the data directory {data_dir} has no database" in error["message"]
            assert answer.headers["Retry-After"] == "5"
        assert not data_dir.exists()  # the refused write created nothing in its place
        assert client.post("/v1/search", json={"query": "kestrel"}).status_code == 200
    finally:
        shutil.move(away, data_dir)
    assert client.get("/readyz").status_code == 200
    again = client.post("/v1/documents", json={"documents": [{"id": "b", "text": "heron"}]}, headers=WRITE)
    assert again.json()["written"] == 1
    assert client.delete("/v1/documents/a", headers=WRITE).json() == {"id": "a", "deleted_chunks": 1}
