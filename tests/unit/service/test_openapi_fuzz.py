"""Schemathesis against the sidecar's own OpenAPI document, in-process: whatever it sends, no 5xx.

The app runs on the embedded engine with a small index already written, API keys configured (the
fuzzed requests carry one, so writes and deletes are exercised too) and keys required for reads.
Every answer must also match the schema the document declares for its status.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.service.app import create_app
from tests.integration.engines import load_records
from tests.unit.service.conftest import KEY, RECORDS
from tests.unit.test_embedded_engine import HashingEmbedder

# The schema is loaded at import, before any fixture runs, so the app gets its own data directory.
_DATA = tempfile.TemporaryDirectory(prefix="esbridge-fuzz-")
_SETTINGS = load_settings(
    index="notes", data_dir=Path(_DATA.name), service={"api_keys": [KEY], "require_key_for_reads": True}
)
_engine = EmbeddedEngine.from_settings(_SETTINGS)
load_records(_engine, "notes", HashingEmbedder(), Path(_DATA.name), RECORDS)
_engine.close()

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_SETTINGS, embedder=HashingEmbedder()))


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_makes_the_service_fail(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate(
        headers={"X-API-Key": KEY},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )
