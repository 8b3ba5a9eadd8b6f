"""Where the live test engines are, and whether they answer."""

from __future__ import annotations

import os
from functools import cache

import pytest

from esbridge.config import redact_url
from esbridge.engines import Capabilities
from esbridge.errors import EsbridgeError

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
            "ESBRIDGE_TEST_ELASTICSEARCH_URL is not set (scripts/engines up elasticsearch, or docker/compose.yaml, "
            "provides one); the adapter was still tested against recorded responses in tests/recorded"
        )
    capabilities = probe(engine)
    if isinstance(capabilities, str):
        return capabilities
    if capabilities.distribution != engine:
        return f"{redact_url(url)} is {capabilities.distribution}, not {engine}"
    return None


@cache
def probe(engine: str) -> Capabilities | str:
    """The capabilities of the live ``engine``, or why it could not be probed."""
    from esbridge.config import load_settings
    from esbridge.engines import connect

    url = engine_url(engine)
    if url is None:
        return f"no URL for {engine}"
    try:
        adapter = connect(load_settings(url=url, engine=engine, retries=0, timeout_s=10))
        try:
            return adapter.probe()
        finally:
            adapter.close()
    except EsbridgeError as exc:
        return f"{redact_url(url)} does not answer ({exc})"


def require_feature(engine_kind: str, feature: str, why: str) -> None:
    """Skip, naming the missing feature, when the live engine's build lacks it."""
    capabilities = probe(engine_kind)
    if isinstance(capabilities, Capabilities) and not capabilities.features.get(feature, True):
        pytest.skip(f"this {engine_kind} build lacks {feature} ({why})")
