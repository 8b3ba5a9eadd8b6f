"""Where the live test engines are, and whether they answer."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import pytest

from esbridge.config import redact_url
from esbridge.embeddings.base import Embedder
from esbridge.engines import Capabilities, Engine
from esbridge.errors import EsbridgeError
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

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


def load_records(
    engine: Engine, alias: str, embedder: Embedder, folder: Path, records: Sequence[Mapping[str, object]]
) -> str:
    """Ingest ``records`` as a JSONL source into a fresh versioned index behind ``alias``."""
    path = folder / "records.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    report = ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="t"))
    assert report.failed == []
    return alias


def require_live(kind: str) -> None:
    """Skip or fail as the rules say when the live ``kind`` cannot be tested.

    In CI the local OpenSearch is started by .ci/run, so its absence fails; an Elasticsearch URL that was
    given but does not answer fails too; an Elasticsearch that was never configured is skipped.
    """
    reason = unavailable_reason(kind)
    if reason is None:
        return
    if kind == "opensearch" and os.environ.get("CI"):
        pytest.fail(f"CI: the local OpenSearch must be running: {reason}")
    if kind == "opensearch" or engine_url(kind) is None:
        pytest.skip(reason)
    pytest.fail(f"ESBRIDGE_TEST_ELASTICSEARCH_URL is set but unusable: {reason}")
