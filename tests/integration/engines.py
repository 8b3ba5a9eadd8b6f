"""Where the live test engines are, and whether they answer."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from functools import cache

from esbridge.config import redact_url

DEFAULT_OPENSEARCH_URL = "http://127.0.0.1:9200"


def engine_url(engine: str) -> str | None:
    if engine == "opensearch":
        return os.environ.get("ESBRIDGE_TEST_OPENSEARCH_URL") or DEFAULT_OPENSEARCH_URL
    if engine == "elasticsearch":
        return os.environ.get("ESBRIDGE_TEST_ELASTICSEARCH_URL") or None
    return None


@cache
def unavailable_reason(engine: str) -> str | None:
    """Why the live ``engine`` cannot be tested, or None when it answers as the engine it should be."""
    url = engine_url(engine)
    if url is None:
        return (
            "ESBRIDGE_TEST_ELASTICSEARCH_URL is not set (no live Elasticsearch 8.x/9.x here; "
            "docker/compose.yaml provides one). Its adapter was tested against recorded responses in tests/recorded."
        )
    from esbridge.config import load_settings

    settings = load_settings(url=url)
    request = urllib.request.Request(settings.url or url)
    if settings.auth.username:
        import base64

        password = settings.auth.password.get_secret_value() if settings.auth.password else ""
        token = base64.b64encode(f"{settings.auth.username}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            info = json.load(answer)
    except (OSError, ValueError) as exc:
        return f"{redact_url(url)} does not answer ({exc})"
    distribution = info.get("version", {}).get("distribution", "elasticsearch")
    if distribution != engine:
        return f"{redact_url(url)} is {distribution}, not {engine}"
    return None
