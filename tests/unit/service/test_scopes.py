"""Key scopes in the keys file, and the file read again when it changes or on SIGHUP."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from esbridge.errors import ConfigError
from esbridge.service.app import reload_keys_on_sighup
from esbridge.service.auth import KeyRing, read_keys_file
from tests.unit.service.conftest import RECORDS, ClientFactory

READER, WRITER, BOTH, ADMIN, PLAIN = "reader-key-1", "writer-key-2", "both-key-3", "admin-key-4", "plain-key-5"
DOCS = {"documents": [{"id": "n", "text": "a note about bread"}]}


def write_keys(path: Path, text: str, *, mtime_ns: int | None = None) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


@pytest.fixture
def keys_path(tmp_path: Path) -> Path:
    text = f"{READER} read\n{WRITER} write  # the importer\n{BOTH} read,write\n{ADMIN} admin\n{PLAIN}\n"
    return write_keys(tmp_path / "keys", text)


@pytest.fixture
def scoped(make_client: ClientFactory, keys_path: Path) -> TestClient:
    """Reads need a key; the file's keys; one write of the records done with the admin key."""
    client = make_client(api_keys_file=keys_path, require_key_for_reads=True, keys_check_interval_s=0)
    assert client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": ADMIN}).status_code == 200
    return client


def status(client: TestClient, key: str, route: str) -> int:
    headers = {"X-API-Key": key}
    if route == "search":
        return client.post("/v1/search", json={"query": "bread"}, headers=headers).status_code
    if route == "write":
        return client.post("/v1/documents", json=DOCS, headers=headers).status_code
    if route == "delete":
        return client.delete("/v1/documents/absent", headers=headers).status_code
    if route == "metrics":
        return client.get("/metrics", headers=headers).status_code
    return client.post("/v1/admin/keys/reload", headers=headers).status_code


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (READER, {"search": 200, "metrics": 200, "write": 403, "delete": 403, "reload": 403}),
        (WRITER, {"search": 403, "metrics": 403, "write": 200, "delete": 404, "reload": 403}),
        (BOTH, {"search": 200, "metrics": 200, "write": 200, "delete": 404, "reload": 403}),
        (PLAIN, {"search": 200, "metrics": 200, "write": 200, "delete": 404, "reload": 403}),
        (ADMIN, {"search": 200, "metrics": 200, "write": 200, "delete": 404, "reload": 200}),
    ],
)
def test_each_scope_opens_exactly_its_routes(scoped: TestClient, key: str, expected: dict[str, int]) -> None:
    assert {route: status(scoped, key, route) for route in expected} == expected


def test_a_read_key_that_writes_is_told_which_scope_it_lacks(scoped: TestClient) -> None:
    answer = scoped.post("/v1/documents", json=DOCS, headers={"Authorization": f"Bearer {READER}"})
    assert answer.status_code == 403
    assert answer.json()["error"] == {
        "kind": "forbidden",
        "message": "the API key has scope(s) read; this route needs write",
        "fields": [],
    }
    assert READER not in answer.text


def test_an_unknown_scope_names_the_line_and_never_the_key(tmp_path: Path) -> None:
    path = write_keys(tmp_path / "keys", f"# header\n{READER} read\n{WRITER} read,wirte\n")
    with pytest.raises(ConfigError) as refused:
        read_keys_file(path)
    assert str(refused.value) == (
        f"API keys file {path}, line 3: unknown scope(s) 'wirte' (scopes are read, write, admin, "
        "comma-separated after the key)"
    )
    assert WRITER not in str(refused.value)


def test_a_key_the_file_drops_is_refused_once_the_file_changes(scoped: TestClient, keys_path: Path) -> None:
    assert status(scoped, WRITER, "write") == 200
    before = keys_path.stat().st_mtime_ns
    write_keys(keys_path, f"{READER} read\n{ADMIN} admin\n", mtime_ns=before + 1_000_000_000)
    assert status(scoped, WRITER, "write") == 401
    assert status(scoped, PLAIN, "search") == 401
    assert status(scoped, READER, "search") == 200
    write_keys(keys_path, f"{READER} read\n{ADMIN} admin\n{WRITER} write\n", mtime_ns=before + 2_000_000_000)
    assert status(scoped, WRITER, "write") == 200  # added back: accepted again without a restart


@pytest.fixture
def restored_sighup() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGHUP)
    yield
    signal.signal(signal.SIGHUP, previous)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.usefixtures("restored_sighup")
def test_sighup_reads_the_file_again(keys_path: Path) -> None:
    ring = KeyRing([], file=keys_path, check_interval_s=3600)  # modification checks are too rare to matter here
    reload_keys_on_sighup(ring)
    before = keys_path.stat()
    write_keys(keys_path, f"{READER} read\n" + "x" * (before.st_size - len(READER) - 6) + "\n")
    os.utime(keys_path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert ring.accepts(WRITER)  # not read again yet
    os.kill(os.getpid(), signal.SIGHUP)
    assert not ring.accepts(WRITER)
    assert ring.accepts(READER)


def test_a_reload_that_cannot_use_the_file_keeps_the_keys_and_a_missing_file_drops_them(
    keys_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ring = KeyRing([PLAIN], file=keys_path, check_interval_s=0)
    keys_path.write_text(f"{READER} read\n", encoding="utf-8")
    keys_path.chmod(0o644)
    with caplog.at_level(logging.ERROR, logger="esbridge.service"):
        assert ring.accepts(WRITER)
    assert "open to group or others (mode 0644)" in caplog.text
    assert "the previous keys stay in use" in caplog.text
    keys_path.unlink()
    assert not ring.accepts(WRITER)
    assert ring.accepts(PLAIN)  # keys from settings are not the file's
    assert WRITER not in caplog.text and READER not in caplog.text


def test_the_admin_route_reports_a_file_it_cannot_use(scoped: TestClient, keys_path: Path) -> None:
    keys_path.chmod(0o640)
    answer = scoped.post("/v1/admin/keys/reload", headers={"X-API-Key": ADMIN})
    assert answer.status_code == 409
    assert answer.json()["error"]["kind"] == "keys_not_reloaded"
    assert status(scoped, READER, "search") == 200


@pytest.mark.parametrize("line", [f"{READER} {WRITER}", f"importer-app {WRITER}", f"{READER} read,{WRITER}"])
def test_a_key_where_a_scope_belongs_is_not_shown_in_the_error(tmp_path: Path, line: str) -> None:
    path = write_keys(tmp_path / "keys", f"{ADMIN} admin\n{line}\n")
    with pytest.raises(ConfigError) as refused:
        read_keys_file(path)
    message = str(refused.value)
    assert message.startswith(f"API keys file {path}, line 2: unknown scope(s) <a word of {len(WRITER)} characters")
    assert WRITER not in message and READER not in message


def test_the_first_key_of_a_file_saved_with_a_byte_order_mark_is_accepted(
    make_client: ClientFactory, tmp_path: Path
) -> None:
    path = tmp_path / "keys"
    path.write_text(f"{READER} read\n{WRITER} write\n", encoding="utf-8-sig")  # as Notepad or PowerShell 5 save it
    path.chmod(0o600)
    client = make_client(api_keys_file=path, require_key_for_reads=True)
    assert status(client, READER, "search") != 401
    assert status(client, WRITER, "write") == 200


def test_a_key_no_client_could_send_is_refused_naming_the_line_not_the_key(tmp_path: Path) -> None:
    path = write_keys(tmp_path / "keys", f"{READER} read\nclé-secrète write\n")
    with pytest.raises(ConfigError) as refused:
        read_keys_file(path)
    assert str(refused.value).startswith(f"API keys file {path}, line 2: the key is not printable ASCII")
    assert "secr" not in str(refused.value)
