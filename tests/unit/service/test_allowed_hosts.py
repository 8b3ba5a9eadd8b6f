"""``service.allowed_hosts``: the Host check (DNS rebinding) stays on off loopback where reads are open, for the
names an operator lists; without them there, ``serve`` warns at start-up."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from esbridge.config.service import ServiceSettings
from esbridge.service.app import start_warnings
from esbridge.service.auth import KeyRing
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings

ANY = "0.0.0.0"  # noqa: S104 (settings only: nothing listens)


def test_open_reads_off_loopback_answer_only_the_allowed_hosts(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], host=ANY, open_reads=True, allowed_hosts="search.internal,*.corp.example")
    written = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert written.status_code == 200, written.text
    for host in ("search.internal:8088", "SEARCH.INTERNAL.", "a.corp.example", "b.a.corp.example:80", "127.0.0.1"):
        answer = client.post("/v1/search", json={"query": "solar"}, headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)
        assert answer.json()["results"][0]["doc_id"] == "solar"
    for host in ("evil.example", "search.internal.evil.example", "corp.example", "xcorp.example", "10.0.0.8:8088"):
        for answer in (
            client.post("/v1/search", json={"query": "solar"}, headers={"Host": host}),
            client.get("/metrics", headers={"Host": host}),
            client.get("/readyz", headers={"Host": host}),
        ):
            assert answer.status_code == 403, (host, answer.text)
            assert answer.json()["error"]["kind"] == "host_refused"
            assert "service.allowed_hosts" in answer.json()["error"]["message"]
            assert "Photovoltaic" not in answer.text


def test_allowed_hosts_keep_the_check_on_where_reads_need_a_key(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], require_key_for_reads=True, allowed_hosts=["search.internal"])
    keyed = {"X-API-Key": KEY}
    written = client.post("/v1/documents", json={"documents": RECORDS}, headers={**keyed, "Host": "search.internal"})
    assert written.status_code == 200, written.text
    assert (
        client.post("/v1/search", json={"query": "x"}, headers={**keyed, "Host": "search.internal"}).status_code == 200
    )
    refused = client.post("/v1/search", json={"query": "x"}, headers={**keyed, "Host": "evil.example"})
    assert (refused.status_code, refused.json()["error"]["kind"]) == (403, "host_refused")


def test_open_reads_off_loopback_without_allowed_hosts_are_warned_about_at_start() -> None:
    settings = service_settings(api_keys=[KEY], host=ANY, open_reads=True)
    [warning] = start_warnings(settings, KeyRing.from_settings(settings.service))
    assert warning.startswith("reads need no key (service.open_reads) and the service listens on 0.0.0.0")
    assert "DNS rebinding" in warning and "ESBRIDGE_SERVICE__ALLOWED_HOSTS" in warning
    for quiet in (
        service_settings(api_keys=[KEY], host=ANY, open_reads=True, allowed_hosts=["search.internal"]),
        service_settings(api_keys=[KEY], host=ANY),  # reads need a key
        service_settings(api_keys=[KEY]),  # loopback: the check is on
    ):
        assert start_warnings(quiet, KeyRing.from_settings(quiet.service)) == []


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("*", "names no host"),
        ("", "names no host"),
        ("https://search.internal", "is a URL"),
        ("search.internal:8088", "has a port"),
        ("search internal", "is not a host name"),
        ("a.*.example", "is not a host name"),
    ],
)
def test_an_allowed_host_that_is_no_host_name_is_refused_saying_why(entry: str, why: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"service.allowed_hosts entry {entry!r} {why}")):
        ServiceSettings(allowed_hosts=[entry])


def test_allowed_hosts_are_read_as_the_check_compares_them() -> None:
    given = ServiceSettings.model_validate({"allowed_hosts": "Search.Internal., [::1], 10.0.0.5, *.Corp.example"})
    assert given.allowed_hosts == ["search.internal", "::1", "10.0.0.5", "*.corp.example"]
