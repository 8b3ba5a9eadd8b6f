"""What of an engine URL may be printed: the scheme, host, port and path, never credentials or a query string."""

from __future__ import annotations

import pytest

from esbridge.config import load_settings, redact_url


def test_redact_url() -> None:
    assert redact_url("https://a:b@host:1/x") == "https://host:1/x"
    assert redact_url("http://host:9200") == "http://host:9200"


def test_redact_url_hides_credentials_it_cannot_parse() -> None:
    assert redact_url("http://admin:9200#topsecret@127.0.0.1:9200") == "http://127.0.0.1:9200"
    assert redact_url("http://u:topsecret@[::1]:9200/p") == "http://[::1]:9200/p"
    assert redact_url("u:topsecret@host:9200") == "host:9200"


@pytest.mark.parametrize(
    ("url", "printed"),
    [
        ("http://127.0.0.1:9200/?token=topsecret", "http://127.0.0.1:9200/?**********"),
        ("https://host:9243/es?api_key=topsecret&x=1", "https://host:9243/es?**********"),
        ("http://host:9200#topsecret", "http://host:9200#**********"),
        ("http://host:9200/p?token=topsecret#more", "http://host:9200/p?**********"),
        ("http://u:p@host:9200/?token=topsecret", "http://host:9200/?**********"),
        ("host:9200?token=topsecret", "host:9200?**********"),
    ],
)
def test_redact_url_hides_a_query_string_and_a_fragment(url: str, printed: str) -> None:
    assert redact_url(url) == printed


def test_settings_print_the_url_without_its_query_string() -> None:
    # The settings refuse such a url (tests/unit/test_engine_url.py); model_copy does not validate what it sets.
    settings = load_settings().model_copy(update={"url": "http://127.0.0.1:9200/?token=topsecret#frag"})

    assert settings.display_url == "http://127.0.0.1:9200/?**********"
    assert settings.redacted()["url"] == "http://127.0.0.1:9200/?**********"
    assert "topsecret" not in str(settings.redacted())
