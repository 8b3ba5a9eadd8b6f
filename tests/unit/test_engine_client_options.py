"""The client options the cluster adapters build from settings: TLS settings apply to every https URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.config import load_settings
from esbridge.engines import elasticsearch as es_adapter
from esbridge.engines import opensearch as os_adapter


@pytest.mark.parametrize("url", ["https://127.0.0.1:9200", "HTTPS://127.0.0.1:9200", "Https://127.0.0.1:9200"])
def test_tls_settings_apply_to_an_https_url_in_any_case(tmp_path: Path, url: str) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
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
