"""The client options the cluster adapters build from settings: TLS settings apply to every https URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esbridge.config import load_settings
from esbridge.engines import elasticsearch as es_adapter
from esbridge.engines import opensearch as os_adapter
from esbridge.errors import ConfigError
from tests.support.certificates import self_signed


@pytest.mark.parametrize("url", ["https://127.0.0.1:9200", "HTTPS://127.0.0.1:9200", "Https://127.0.0.1:9200"])
def test_tls_settings_apply_to_an_https_url_in_any_case(tmp_path: Path, url: str) -> None:
    ca, _ = self_signed(tmp_path)
    settings = load_settings(url=url, tls={"verify": False, "ca_certs": str(ca)})

    opensearch = os_adapter.client_options(settings)
    assert (opensearch["use_ssl"], opensearch["verify_certs"], opensearch["ca_certs"]) == (True, False, str(ca))
    elasticsearch = es_adapter.client_options(settings)
    assert (elasticsearch["verify_certs"], elasticsearch["ca_certs"]) == (False, str(ca))


@pytest.mark.parametrize("url", ["http://127.0.0.1:9200", "HTTP://127.0.0.1:9200"])
def test_an_http_url_gets_no_tls_options(url: str) -> None:
    settings = load_settings(url=url, tls={"verify": False})
    assert "use_ssl" not in os_adapter.client_options(settings)
    assert "verify_certs" not in es_adapter.client_options(settings)


def test_a_ca_bundle_that_holds_no_certificate_is_refused_when_the_settings_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Left to the clients, the async ones raise a bare ssl.SSLError on first use: the sidecar answered 500.
    not_a_bundle = tmp_path / "ca.pem"
    not_a_bundle.write_text("not a certificate\n", encoding="utf-8")
    monkeypatch.setenv("ESBRIDGE_TLS__CA_CERTS", str(not_a_bundle))
    expected = r"tls\.ca_certs .*ca\.pem.*\(environment variable ESBRIDGE_TLS__CA_CERTS\)"
    with pytest.raises(ConfigError, match=expected):
        load_settings(url="https://127.0.0.1:9200")


def test_a_client_certificate_and_key_that_cannot_be_loaded_are_refused_when_the_settings_are_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cert, key = self_signed(tmp_path / "a")
    _, other_key = self_signed(tmp_path / "b")
    garbage = tmp_path / "client.pem"
    garbage.write_text("not a certificate\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tls\.client_cert .*client\.pem"):
        load_settings(url="https://127.0.0.1:9200", tls={"client_cert": str(garbage)})
    with pytest.raises(ConfigError, match=r"tls\.client_cert .*cert\.pem"):
        load_settings(url="https://127.0.0.1:9200", tls={"client_cert": str(cert), "client_key": str(other_key)})
    settings = load_settings(url="https://127.0.0.1:9200", tls={"client_cert": str(cert), "client_key": str(key)})
    assert settings.tls.client_key == key


def test_an_encrypted_client_key_is_refused_without_asking_for_its_passphrase(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    cert, key = self_signed(tmp_path)
    loaded = serialization.load_pem_private_key(key.read_bytes(), password=None)
    encrypted = tmp_path / "encrypted.pem"
    encrypted.write_bytes(
        loaded.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    with pytest.raises(ConfigError, match=r"tls\.client_key .* is encrypted"):
        load_settings(url="https://127.0.0.1:9200", tls={"client_cert": str(cert), "client_key": str(encrypted)})


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://search.internal", "http://search.internal:9200"),
        ("https://search.internal", "https://search.internal:443"),
        ("http://[::1]", "http://[::1]:9200"),
        ("https://search.internal:9243", "https://search.internal:9243"),
    ],
)
def test_an_elasticsearch_url_without_a_port_gets_the_one_opensearch_py_would_use(url: str, host: str) -> None:
    options = es_adapter.client_options(load_settings(url=url))
    assert options["hosts"] == [host]
    # elasticsearch-py refused a URL without a port with a bare ValueError (a traceback from every command).
    Elasticsearch(**options).close()
