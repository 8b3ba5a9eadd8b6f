"""Where reads need no key (loopback, the default), only requests naming a loopback host are answered: a web page
that rebinds its own name to 127.0.0.1 (DNS rebinding) is same-origin with the service in the browser, and could
otherwise search the index and read the answers."""

from __future__ import annotations

import pytest

from tests.unit.service.conftest import KEY, RECORDS, ClientFactory

REBOUND = ["evil.example", "evil.example:8088", "127.0.0.1.nip.io:8088", "localhost.evil.example", "10.0.0.8:8088"]
LOOPBACK = ["localhost:8088", "LOCALHOST", "localhost.", "127.0.0.1:8088", "127.0.0.1", "127.0.0.2:9000", "[::1]:8088"]


@pytest.mark.parametrize("host", REBOUND)
def test_a_request_naming_another_host_is_refused_while_reads_need_no_key(
    make_client: ClientFactory, host: str
) -> None:
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert written.status_code == 200, written.text

    for answer in (
        client.post("/v1/search", json={"query": "solar"}, headers={"Host": host}),
        client.get("/readyz", headers={"Host": host}),
        client.get("/metrics", headers={"Host": host}),
    ):
        assert answer.status_code == 403, answer.text
        error = answer.json()["error"]
        assert error["kind"] == "host_refused"
        assert "require_key_for_reads" in error["message"]
        assert "Photovoltaic" not in answer.text and "notes" not in answer.text


@pytest.mark.parametrize("host", LOOPBACK)
def test_a_request_naming_a_loopback_host_is_answered(make_client: ClientFactory, host: str) -> None:
    client = make_client()
    assert client.get("/healthz", headers={"Host": host}).status_code == 200
    assert client.post("/v1/search", json={"query": "solar"}, headers={"Host": host}).status_code != 403


def test_any_host_is_answered_where_reads_need_a_key(make_client: ClientFactory) -> None:
    # Behind a proxy that keeps the caller's Host; a rebinding page has no key to send.
    client = make_client(api_keys=[KEY], require_key_for_reads=True)
    written = client.post(
        "/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY, "Host": "search.example"}
    )
    assert written.status_code == 200, written.text
    answer = client.post("/v1/search", json={"query": "solar"}, headers={"X-API-Key": KEY, "Host": "search.example"})
    assert answer.status_code == 200, answer.text
    assert client.post("/v1/search", json={"query": "solar"}, headers={"Host": "search.example"}).status_code == 401
