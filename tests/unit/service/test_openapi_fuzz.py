"""Schemathesis against the sidecar's whole OpenAPI document, in-process: whatever it sends, no 5xx.

The app runs on the embedded engine with a small index already written, an ``admin`` key from a keys
file (the fuzzed requests carry it, so writes, deletes and the key reload are exercised too), keys
required for reads and rate limits off (a 429 would stop the request before the route). Requests are
generated valid and invalid (schemathesis' positive and negative modes). Every answer must match the
schema the document declares for its status, and every error answer, declared or not (405, unknown
routes), must be the service's JSON error body. ``ESBRIDGE_TEST_FUZZ_EXAMPLES`` sets the examples per route.
"""

from __future__ import annotations

import json
import os
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
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS

# The schema is loaded at import, before any fixture runs, so the app gets its own data directory.
_DATA = tempfile.TemporaryDirectory(prefix="esbridge-fuzz-")
_KEYS = Path(_DATA.name) / "keys"
_KEYS.write_text(f"{KEY} admin\n", encoding="utf-8")
_KEYS.chmod(0o600)
_SETTINGS = load_settings(
    index="notes",
    data_dir=Path(_DATA.name),
    service={"api_keys_file": _KEYS, "require_key_for_reads": True, "rate_limit_per_s": 0},
)
_engine = EmbeddedEngine.from_settings(_SETTINGS)
load_records(_engine, "notes", HashingEmbedder(), Path(_DATA.name), RECORDS)
_engine.close()

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_SETTINGS, embedder=HashingEmbedder()))


@schemathesis.check
def errors_are_json(ctx: Any, response: Any, case: schemathesis.Case[Any]) -> bool:
    """Every answer of 400 or above is ``{"error": {"kind": str, "message": str, "fields": [...]}}``."""
    if response.status_code < 400:
        return True
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), response.headers
    error = json.loads(response.content)["error"]
    assert isinstance(error["kind"], str) and isinstance(error["message"], str), error
    assert isinstance(error["fields"], list), error
    return True


@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("ESBRIDGE_TEST_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_request_makes_the_service_fail(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate(
        headers={"X-API-Key": KEY},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance, errors_are_json],
    )
