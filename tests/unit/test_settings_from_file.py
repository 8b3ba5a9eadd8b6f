"""Settings read from a TOML file are a plain ``Settings``: printed and compared as one."""

from __future__ import annotations

from pathlib import Path

from esbridge.config import load_settings
from esbridge.config.settings import Settings

SECRET = "hunter2-from-the-file"


def _settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "chosen.toml"
    path.write_text(
        f'url = "http://bob:{SECRET}@127.0.0.1:9200"\nindex = "notes"\n[service]\napi_keys = ["{SECRET}-service"]\n',
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


def test_settings_from_a_file_print_as_settings_without_their_secrets(tmp_path: Path) -> None:
    settings = load_settings(_settings_file(tmp_path))

    assert settings.index == "notes"
    assert settings.auth.password is not None
    assert settings.auth.password.get_secret_value() == SECRET
    assert repr(settings).startswith("Settings(url='http://127.0.0.1:9200', engine='auto', index='notes',")
    for text in (repr(settings), str(settings)):
        assert SECRET not in text


def test_settings_from_a_file_equal_settings_built_in_code(tmp_path: Path) -> None:
    settings = load_settings(_settings_file(tmp_path))
    built = Settings.model_validate(
        {
            "url": "http://127.0.0.1:9200",
            "index": "notes",
            "auth": {"username": "bob", "password": SECRET},
            "service": {"api_keys": [f"{SECRET}-service"]},
        }
    )

    assert type(settings) is Settings
    assert settings == built


def test_the_file_is_read_only_by_the_load_that_named_it(tmp_path: Path) -> None:
    load_settings(_settings_file(tmp_path))
    assert Settings().index == "esbridge"
    assert load_settings().index == "esbridge"
