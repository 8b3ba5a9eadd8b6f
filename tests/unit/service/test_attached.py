"""The sidecar searches an attached index and refuses to write to it."""

from __future__ import annotations

from esbridge.config import load_settings
from esbridge.engines import connect
from tests.unit.service.conftest import KEY, ClientFactory


def test_writes_to_an_attached_index_are_refused_and_write_nothing(make_client: ClientFactory) -> None:
    settings = load_settings(
        index="products", service={"api_keys": [KEY]}, fields={"products": {"text": {"name": 2.0, "body": 1.0}}}
    )
    client = make_client(settings)
    record = {"id": "x", "title": "Extra", "text": "More text."}
    upsert = client.post("/v1/documents", json={"documents": [record]}, headers={"X-API-Key": KEY})
    assert upsert.status_code == 409
    assert upsert.json()["error"]["kind"] == "read_only_index"
    assert "[fields.products]" in upsert.json()["error"]["message"]
    deleted = client.delete("/v1/documents/x", headers={"X-API-Key": KEY})
    assert deleted.status_code == 409
    engine = connect(settings)
    try:
        assert not engine.index_exists("products")  # not even created on the way
    finally:
        engine.close()
