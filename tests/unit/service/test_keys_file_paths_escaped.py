"""An API keys file's name is shown escaped in every refusal: a name holding a newline or a control character can
neither split the log line that names it nor drive the terminal."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from esbridge.config.service import ServiceSettings
from esbridge.errors import ConfigError
from esbridge.service.auth import KeyRing, read_keys_file
from tests.unit.service.conftest import KEY

NAME = "keys\nERROR forged line\x1b[2J.txt"
SHOWN = "keys\\u000aERROR forged line\\u001b[2J.txt"


def keys_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / NAME
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as refused:
        read_keys_file(path)
    message = str(refused.value)
    assert "\n" not in message and "\x1b" not in message
    assert f"{path.parent}/{SHOWN}" in message
    return message


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"{KEY} read,wrte\n", ", line 1: unknown scope(s) 'wrte'"),
        ("schlüssel-0123456789\n", ", line 1: the key is not printable ASCII"),
    ],
    ids=["unknown scope", "not ascii"],
)
def test_a_bad_line_names_the_file_escaped(tmp_path: Path, text: str, says: str) -> None:
    assert says in refusal(keys_file(tmp_path, text))


def test_an_unreadable_keys_file_is_named_escaped(tmp_path: Path) -> None:
    path = keys_file(tmp_path, KEY)
    path.write_bytes(b"\xff\xfe\xfa not utf-8")
    assert refusal(path).startswith("cannot read the API keys file ")


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_keys_file_open_to_others_is_named_escaped_in_the_refusal_and_its_remedy(tmp_path: Path) -> None:
    message = refusal(keys_file(tmp_path, f"{KEY}\n", mode=0o644))
    assert message.count(SHOWN) == 2  # the file, then the chmod that restricts it
    assert message.endswith(f"chmod 600 {tmp_path}/{SHOWN}")


def test_a_reload_that_fails_logs_one_line_naming_the_file_escaped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = keys_file(tmp_path, f"{KEY}\n")
    ring = KeyRing.from_settings(ServiceSettings(api_keys_file=path))
    path.write_text(f"{KEY} sudo\n", encoding="utf-8")
    caplog.set_level(logging.ERROR, logger="esbridge.service")
    ring.request_reload()
    assert ring.accepts(KEY)  # the previous keys stay in use
    (logged,) = [record.getMessage() for record in caplog.records]
    assert "\n" not in logged and SHOWN in logged


def test_a_keys_file_that_is_gone_is_logged_on_one_line_naming_it_escaped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = keys_file(tmp_path, f"{KEY}\n")
    ring = KeyRing.from_settings(ServiceSettings(api_keys_file=path))
    path.unlink()
    caplog.set_level(logging.ERROR, logger="esbridge.service")
    ring.request_reload()
    assert not ring.accepts(KEY)
    (logged,) = [record.getMessage() for record in caplog.records]
    assert "\n" not in logged and SHOWN in logged
