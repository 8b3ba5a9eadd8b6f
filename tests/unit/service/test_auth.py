"""API keys: which requests need one, how it is presented, and that it never leaks."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from esbridge.config import Settings
from esbridge.config.service import ServiceSettings
from esbridge.errors import ConfigError
from esbridge.service.app import create_app
from esbridge.service.auth import KeyRing, presented_key
from tests.unit.service.conftest import KEY, OTHER_KEY, RECORDS, ClientFactory, service_settings

DOCS = {"documents": [{"id": "n", "text": "note"}]}


def test_writes_are_refused_with_403_when_no_keys_are_configured(make_client: ClientFactory) -> None:
    client = make_client()
    for answer in (
        client.post("/v1/documents", json=DOCS),
        client.post("/v1/documents", json=DOCS, headers={"X-API-Key": "anything"}),
        client.delete("/v1/documents/n", headers={"Authorization": "Bearer anything"}),
    ):
        assert answer.status_code == 403
        assert answer.json()["error"]["kind"] == "writes_disabled"
        assert "ESBRIDGE_API_KEYS" in answer.json()["error"]["message"]


def test_writes_without_or_with_a_wrong_key_are_401(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    cases = [
        {},
        {"X-API-Key": "wrong"},
        {"Authorization": f"Bearer {KEY}x"},
        {"Authorization": f"Basic {KEY}"},
        {"X-API-Key": KEY[:-1]},
    ]
    for headers in cases:
        for answer in (
            client.post("/v1/documents", json=DOCS, headers=headers),
            client.delete("/v1/documents/n", headers=headers),
        ):
            assert answer.status_code == 401, headers
            assert answer.headers["WWW-Authenticate"] == "Bearer"
            assert answer.json()["error"]["kind"] == "unauthorized"


def test_a_key_in_an_authorization_header_of_another_scheme_is_refused_saying_how_to_send_it(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    for header in (f"Basic {KEY}", KEY, "Bearer "):
        answer = client.post("/v1/documents", json=DOCS, headers={"Authorization": header})
        assert answer.status_code == 401
        message = answer.json()["error"]["message"]
        assert message == (
            "an API key is required; the Authorization header is read only as 'Bearer <key>' (or send X-API-Key: <key>)"
        )
    assert client.post("/v1/documents", json=DOCS).json()["error"]["message"] == "an API key is required"


def test_an_unauthenticated_write_is_refused_before_its_body_is_judged(make_client: ClientFactory) -> None:
    answer = make_client(api_keys=[KEY]).post("/v1/documents", json={"not": "valid"})
    assert answer.status_code == 401


def test_either_header_and_any_configured_key_is_accepted(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY, OTHER_KEY])
    for headers in ({"X-API-Key": KEY}, {"Authorization": f"Bearer {OTHER_KEY}"}, {"authorization": f"bearer {KEY}"}):
        assert client.post("/v1/documents", json=DOCS, headers=headers).status_code == 200, headers


def test_keys_from_a_file_are_accepted(make_client: ClientFactory, tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"# rotated 2024-05\n\n  {OTHER_KEY}  \n", encoding="utf-8")
    keys.chmod(0o600)
    client = make_client(api_keys_file=keys)
    assert client.post("/v1/documents", json=DOCS, headers={"X-API-Key": OTHER_KEY}).status_code == 200
    assert client.post("/v1/documents", json=DOCS, headers={"X-API-Key": "# rotated 2024-05"}).status_code == 401


def test_reads_are_open_by_default_even_with_keys(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    assert client.post("/v1/search", json={"query": "x"}).status_code == 503  # no index yet, but not 401
    assert client.get("/metrics").status_code == 200


def test_reads_need_a_key_when_configured(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], require_key_for_reads=True)
    client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert client.post("/v1/search", json={"query": "bread"}).status_code == 401
    assert client.post("/v1/search", json={"query": "bread"}, headers={"X-API-Key": "no"}).status_code == 401
    assert client.get("/metrics").status_code == 401
    assert client.post("/v1/search", json={"query": "bread"}, headers={"X-API-Key": KEY}).status_code == 200
    assert client.get("/metrics", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    for open_route in ("/healthz", "/readyz", "/openapi.json"):
        assert client.get(open_route).status_code in (200, 503), open_route
        assert client.get(open_route).status_code != 401


def test_requiring_keys_for_reads_without_any_key_refuses_to_start() -> None:
    with pytest.raises(ConfigError, match="no API keys"):
        KeyRing.from_settings(ServiceSettings(require_key_for_reads=True))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.internal"])  # noqa: S104
def test_a_non_loopback_host_without_keys_refuses_to_start_unless_reads_are_opened(host: str) -> None:
    with pytest.raises(ConfigError, match=f"listens on {host}, not on loopback.*ESBRIDGE_API_KEYS.*open_reads"):
        KeyRing.from_settings(ServiceSettings(host=host))
    assert not KeyRing.from_settings(ServiceSettings(host=host, open_reads=True)).configured


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost"])
def test_loopback_hosts_keep_reads_open(host: str) -> None:
    assert ServiceSettings(host=host).loopback
    assert not ServiceSettings(host=host).reads_need_key


def test_reads_need_a_key_on_a_non_loopback_host(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], host="0.0.0.0")  # noqa: S104 (settings only: nothing listens)
    client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert client.post("/v1/search", json={"query": "bread"}).status_code == 401
    assert client.get("/metrics").status_code == 401
    assert client.post("/v1/search", json={"query": "bread"}, headers={"X-API-Key": KEY}).status_code == 200
    assert client.get("/healthz").status_code == 200
    opened = make_client(api_keys=[KEY], host="0.0.0.0", open_reads=True)  # noqa: S104
    assert opened.get("/metrics").status_code == 200


def test_keys_never_appear_in_logs_answers_or_settings(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client(api_keys=[KEY])
    answers = [
        client.post("/v1/documents", json=DOCS, headers={"X-API-Key": KEY}),
        client.post("/v1/documents", json=DOCS, headers={"X-API-Key": KEY + "-wrong"}),
        client.get("/metrics"),
        client.get("/openapi.json"),
    ]
    settings = client.app.state.settings  # type: ignore[attr-defined]
    for text in (caplog.text, repr(settings), str(settings.redacted()), *(answer.text for answer in answers)):
        assert KEY not in text
    assert repr(client.app.state.keys) == "KeyRing(1 keys)"  # type: ignore[attr-defined]


def test_keyring_accepts_exactly_the_configured_keys() -> None:
    ring = KeyRing(["alpha", "beta"])
    assert ring.accepts("alpha") and ring.accepts("beta")
    assert not ring.accepts("alph") and not ring.accepts("alpha ") and not ring.accepts("")
    assert not ring.accepts(None)
    assert not KeyRing([]).accepts("alpha")


def test_presented_key_prefers_the_bearer_token() -> None:
    assert presented_key("Bearer  tok ", "hdr") == "tok"
    assert presented_key("Basic abc", "hdr") == "hdr"
    assert presented_key(None, " hdr ") == "hdr"
    assert presented_key("Bearer ", None) is None


def test_the_testclient_is_not_treated_specially(client: TestClient) -> None:
    assert client.post("/v1/documents", json=DOCS).status_code == 401


def keys_file(folder: Path, mode: int) -> Path:
    path = folder / "keys.txt"
    path.write_text(f"# the app\n{KEY}\n", encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620], ids=oct)
def test_a_keys_file_open_to_group_or_others_is_refused_at_start(tmp_path: Path, mode: int) -> None:
    path = keys_file(tmp_path, mode)
    with pytest.raises(ConfigError) as refused:
        create_app(service_settings(api_keys_file=path), load_model=False)
    assert str(refused.value) == (
        f"API keys file {path} is open to group or others (mode {mode:04o}), so its keys cannot be trusted; "
        f"restrict it with: chmod 600 {path}"
    )
    assert KEY not in str(refused.value)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o600, 0o400], ids=oct)
def test_a_keys_file_only_its_owner_can_use_is_accepted_quietly(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, mode: int
) -> None:
    caplog.set_level(logging.WARNING, logger="esbridge.service")
    assert KeyRing.from_settings(ServiceSettings(api_keys_file=keys_file(tmp_path, mode))).accepts(KEY)
    assert caplog.records == []


def _started(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` up to where uvicorn would start serving; the ``esbridge`` logger is restored afterwards."""
    import uvicorn

    from esbridge.service import app as service_app

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    monkeypatch.setattr(service_app, "reload_keys_on_sighup", lambda keys: None)
    events = logging.getLogger("esbridge")
    saved = (list(events.handlers), events.level, events.propagate)
    try:
        service_app.serve(settings)
    finally:
        events.handlers, events.level, events.propagate = saved


def test_serve_warns_of_keys_short_enough_to_guess_without_showing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("abc123 read\n" + "k" * 32 + " write\n")
    keys_file.chmod(0o600)
    settings = service_settings(api_keys=["s3cret", KEY], api_keys_file=str(keys_file), access_log=False)
    _started(settings, monkeypatch)
    logged = capsys.readouterr().err
    assert "2 of 4 API key(s) have fewer than 16 characters, few enough to be guessed" in logged
    assert "secrets.token_urlsafe(32)" in logged
    assert "s3cret" not in logged and "abc123" not in logged

    _started(service_settings(api_keys=[KEY], access_log=False), monkeypatch)
    assert "API key(s) have fewer" not in capsys.readouterr().err
