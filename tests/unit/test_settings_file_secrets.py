"""A settings file holding a secret that group or others may read is named in a warning, never the secret."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from esbridge.config import load_settings
from esbridge.errors import SettingsWarning

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")

SECRET = "hunter2-not-for-others"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (f'url = "http://bob:{SECRET}@127.0.0.1:9200"\n', "a password in url"),
        (f'[auth]\nusername = "bob"\npassword = "{SECRET}"\n', "auth.password"),
        (f'[auth]\napi_key = "{SECRET}"\n', "auth.api_key"),
        (f'[service]\napi_keys = ["{SECRET}"]\n', "service.api_keys"),
    ],
)
def test_a_settings_file_holding_a_secret_that_others_may_read_is_named(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "esbridge.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)
    with pytest.warns(SettingsWarning) as warned:
        load_settings(path)
    message = str(warned[0].message)
    assert f"holds {named} and group or others may read it (mode 0644)" in message
    assert f"chmod 600 {path}" in message
    assert SECRET not in message

    path.chmod(0o600)
    load_settings(path)  # no warning: the test suite turns warnings into errors


def test_a_settings_file_without_secrets_may_be_read_by_anyone(tmp_path: Path) -> None:
    path = tmp_path / "esbridge.toml"
    path.write_text('url = "http://bob@127.0.0.1:9200"\nindex = "notes"\n', encoding="utf-8")
    path.chmod(0o644)
    assert load_settings(path).index == "notes"
