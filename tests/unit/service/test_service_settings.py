"""The [service] settings: defaults, ESBRIDGE_API_KEYS as a comma list, precedence, secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from esbridge.config import load_settings
from esbridge.errors import ConfigError


def keys(**overrides: Any) -> list[str]:
    return [key.get_secret_value() for key in load_settings(**overrides).service.api_keys]


def test_defaults_bind_loopback_with_no_keys_and_no_cors() -> None:
    service = load_settings().service
    assert service.host == "127.0.0.1"
    assert service.api_keys == []
    assert service.require_key_for_reads is False
    assert service.cors_origins == []


def test_api_keys_env_is_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_API_KEYS", "alpha, beta,,gamma ")
    assert keys() == ["alpha", "beta", "gamma"]


def test_api_keys_env_also_takes_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_API_KEYS", '["with,comma", "b"]')
    assert keys() == ["with,comma", "b"]


def test_nested_env_and_cors_origins_are_comma_lists_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_SERVICE__API_KEYS", "one,two")
    monkeypatch.setenv("ESBRIDGE_SERVICE__CORS_ORIGINS", "https://a.example,https://b.example")
    settings = load_settings()
    assert [key.get_secret_value() for key in settings.service.api_keys] == ["one", "two"]
    assert settings.service.cors_origins == ["https://a.example", "https://b.example"]


def test_precedence_flags_over_env_over_file(monkeypatch: pytest.MonkeyPatch) -> None:
    Path("esbridge.toml").write_text(
        '[service]\nport = 9000\nmax_top_n = 20\napi_keys = ["from-file"]\nhost = "10.0.0.1"\n', encoding="utf-8"
    )
    Path("esbridge.toml").chmod(0o600)  # a file holding keys that others may read is warned about
    assert keys() == ["from-file"]
    monkeypatch.setenv("ESBRIDGE_API_KEYS", "from-short-env")
    assert keys() == ["from-short-env"]
    monkeypatch.setenv("ESBRIDGE_SERVICE__API_KEYS", "from-nested-env")
    monkeypatch.setenv("ESBRIDGE_SERVICE__PORT", "9100")
    settings = load_settings(service={"host": "127.0.0.2"})
    assert [key.get_secret_value() for key in settings.service.api_keys] == ["from-nested-env"]
    assert settings.service.port == 9100  # env beats file
    assert settings.service.max_top_n == 20  # file beats default
    assert settings.service.host == "127.0.0.2"  # code beats file


def test_keys_are_secret_in_repr_and_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_API_KEYS", "very-secret-key")
    settings = load_settings()
    assert "very-secret-key" not in repr(settings)
    assert "very-secret-key" not in str(settings.redacted())
    assert settings.redacted()["service"]["api_keys"] == ["**********"]


def test_bad_service_settings_are_config_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ESBRIDGE_API_KEYS", "ok, ")
    assert keys() == ["ok"]
    with pytest.raises(ConfigError, match=r"service\.api_keys_file not found"):
        load_settings(service={"api_keys_file": tmp_path / "missing"})
    with pytest.raises(ConfigError, match=r"service\.api_keys_file is a folder, not a file"):
        load_settings(service={"api_keys_file": tmp_path})
    with pytest.raises(ConfigError, match=r"service\.port"):
        load_settings(service={"port": 70000})
    with pytest.raises(ConfigError, match=r"service\.api_keys"):
        load_settings(service={"api_keys": "[not json"})


def test_a_key_no_http_client_could_send_is_refused_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_API_KEYS", "ok-key,clé-secrète")
    with pytest.raises(ConfigError, match=r"API keys must be printable ASCII") as refused:
        load_settings()
    assert "secr" not in str(refused.value)
