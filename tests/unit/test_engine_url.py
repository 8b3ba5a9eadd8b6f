"""The engine URL as a setting: a query string or fragment is refused (the clients never send it), credentials
bound for another host over plain http are warned about, and neither the errors nor repr show a secret."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.errors import ConfigError, SettingsWarning

SECRET = "tok-5e6f7a"


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:9200/?token={SECRET}",
        f"https://search.example:9243/es?api_key={SECRET}&x=1",
        f"http://127.0.0.1:9200#{SECRET}",
        f"https://u:p@search.example:9243/?token={SECRET}",
    ],
)
def test_a_query_string_or_fragment_in_url_is_refused_without_showing_it(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(url=url)

    message = str(refused.value)
    assert "url: url '" in message
    assert "has a query string or fragment, which the engine clients never send" in message
    assert "auth.username and auth.password" in message
    assert "auth.api_key" in message
    assert SECRET not in message


def test_the_refusal_names_where_the_url_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_URL", f"http://127.0.0.1:9200/?token={SECRET}")
    with pytest.raises(ConfigError, match=r"\(environment variable ESBRIDGE_URL\)") as from_env:
        load_settings()
    assert SECRET not in str(from_env.value)

    monkeypatch.delenv("ESBRIDGE_URL")
    config = tmp_path / "esbridge.toml"
    config.write_text(f'url = "http://127.0.0.1:9200/?token={SECRET}"\n', encoding="utf-8")
    config.chmod(0o600)
    with pytest.raises(ConfigError, match=rf"\(config file {config}\)") as from_file:
        load_settings(config_file=config)
    assert SECRET not in str(from_file.value)


@pytest.mark.parametrize("command", ["info", "search tides"])
def test_the_cli_refuses_a_token_in_url_before_connecting(command: str) -> None:
    result = CliRunner().invoke(main, [*command.split(), "--url", f"http://127.0.0.1:1/?token={SECRET}"])

    assert result.exit_code != 0
    assert "has a query string or fragment" in result.output
    assert "cannot connect" not in result.output
    assert SECRET not in result.output


@pytest.mark.parametrize("server", ["mcp", "serve"])
def test_the_servers_refuse_a_token_in_url_before_they_start(server: str) -> None:
    # Processes of their own, with a time limit: mcp needs a real standard output, and a server that started would
    # run on.
    ran = subprocess.run(
        [sys.executable, "-m", "esbridge", server, "--url", f"http://127.0.0.1:1/?token={SECRET}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert ran.returncode != 0
    assert "has a query string or fragment" in ran.stderr
    assert SECRET not in ran.stderr + ran.stdout


def test_an_empty_path_and_a_plain_url_are_still_accepted() -> None:
    assert load_settings(url="https://search.example:9243/es/").url == "https://search.example:9243/es"
    assert load_settings(url="http://127.0.0.1:9200/").url == "http://127.0.0.1:9200"


def test_repr_and_str_never_show_a_secret_in_url() -> None:
    # model_copy does not validate: a url set through it keeps whatever it holds.
    settings = load_settings(url="https://search.example:9243").model_copy(
        update={"url": f"http://u:{SECRET}@search.example:9243/?token={SECRET}#{SECRET}"}
    )

    for text in (repr(settings), str(settings)):
        assert "url='http://search.example:9243/?**********'" in text
        assert SECRET not in text
    assert SECRET in str(settings.url)  # what the adapters are given is untouched


@pytest.mark.parametrize(
    ("settings", "host"),
    [
        ({"url": "http://esbridge:s3cret@search.internal:9200"}, "search.internal"),
        ({"url": "http://10.0.0.7:9200", "auth": {"username": "u", "password": "s3cret"}}, "10.0.0.7"),
        ({"url": "HTTP://search.internal:9200", "auth": {"api_key": "s3cret"}}, "search.internal"),
        ({"url": "http://[2001:db8::1]:9200", "auth": {"api_key": "s3cret"}}, "2001:db8::1"),
    ],
)
def test_credentials_over_plain_http_to_another_host_are_warned_about(settings: dict[str, Any], host: str) -> None:
    with pytest.warns(SettingsWarning, match="over plain http") as caught:
        load_settings(**settings)

    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"are sent to {host} over plain http" in message
    assert "use https://" in message
    assert "s3cret" not in message


@pytest.mark.parametrize(
    "settings",
    [
        {"url": "https://esbridge:s3cret@search.internal:9200"},
        {"url": "http://esbridge:s3cret@127.0.0.1:9200"},
        {"url": "http://esbridge:s3cret@localhost:9200"},
        {"url": "http://[::1]:9200", "auth": {"api_key": "s3cret"}},
        {"url": "http://search.internal:9200"},
        {"url": "http://search.internal:9200", "auth": {"aws_sigv4": True, "aws_region": "eu-west-1"}},
        {"auth": {"cloud_id": "deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg==", "api_key": "s3cret"}},
    ],
)
def test_no_warning_over_https_on_this_machine_or_without_credentials(settings: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_settings(**settings)


@pytest.mark.filterwarnings("default::esbridge.errors.SettingsWarning")  # Python's own filter: once per place
def test_the_cli_warns_once_naming_the_host_and_not_the_password() -> None:
    url = "http://esbridge:s3cret@search.internal:9200"
    result = CliRunner().invoke(main, ["mapping", "show", "--dialect", "opensearch", "--url", url])

    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: credentials (auth.username and auth.password) are sent to search.internal over plain http, where "
        "anyone on the network between can read them: use https:// in url (tls.ca_certs names a private CA)\n"
    )
    assert "s3cret" not in result.output
