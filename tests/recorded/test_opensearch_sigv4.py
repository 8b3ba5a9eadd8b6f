"""Amazon OpenSearch Service: requests are signed with SigV4 by opensearch-py's signer."""

from __future__ import annotations

import pytest

from esbridge.config import load_settings
from esbridge.engines.opensearch import OpenSearchEngine
from tests.support.loopback import Recording, ReplayServer


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_requests_are_signed_for_the_region_and_service(monkeypatch: pytest.MonkeyPatch, service: str) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-never-printed")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    replay = ReplayServer()
    replay.route("HEAD", "/notes", Recording(200, None, {"Content-Type": "application/json"}))
    with replay.running():
        settings = load_settings(
            url=replay.url,
            engine="opensearch",
            auth={"aws_sigv4": True, "aws_region": "eu-west-1", "aws_service": service},
        )
        engine = OpenSearchEngine(settings)
        assert engine.index_exists("notes") is True
        engine.close()
    headers = replay.requests_to("HEAD", "/notes")[0].headers
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAEXAMPLEKEY000000/")
    assert f"/eu-west-1/{service}/aws4_request" in headers["authorization"]
    assert "x-amz-date" in headers
    assert "example-secret-never-printed" not in str(headers)


def test_missing_aws_credentials_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from esbridge.errors import ConfigError

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    settings = load_settings(url="https://search.example:443", auth={"aws_sigv4": True, "aws_region": "eu-west-1"})
    with pytest.raises(ConfigError, match="no AWS credentials"):
        OpenSearchEngine(settings)
