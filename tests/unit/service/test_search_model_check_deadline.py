"""A sidecar search whose check of the query model against the index's cannot read the index's model record in
its time answers 504 saying so, before the request's own 504 (which would say no more than `no answer in time`),
rather than search with its model unchecked."""

from __future__ import annotations

from esbridge.config import load_settings
from tests.unit.service.conftest import ClientFactory


def test_a_model_check_a_hung_engine_does_not_answer_is_504_naming_the_check(
    make_client: ClientFactory, silent_url: str
) -> None:
    # Alone, the engine client would wait 2 x 10 s for the model record.
    settings = load_settings(
        url=silent_url, engine="opensearch", retries=1, timeout_s=10, index="notes", service={"request_timeout_s": 4}
    )
    client = make_client(settings)
    answer = client.post("/v1/search", json={"query": "anything"})
    assert answer.status_code == 504, answer.text
    error = answer.json()["error"]
    assert error["kind"] == "timeout"
    assert error["message"].startswith(f"check the query model failed on {silent_url}, index 'notes': ")
    assert "the index's model record was not read (no answer within the " in error["message"]
    assert "its query model could not be checked against the model that made the index's vectors" in error["message"]
