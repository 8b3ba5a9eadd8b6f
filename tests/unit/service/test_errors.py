"""The one mapping from esbridge errors to HTTP answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from esbridge import errors
from esbridge.service.errors import ServiceError, from_exception

WHERE: dict[str, Any] = {"url": "http://127.0.0.1:9200", "operation": "search", "index": "notes"}


@pytest.mark.parametrize(
    ("exc", "status", "kind", "retry_after"),
    [
        (errors.EngineUnavailable("refused", **WHERE), 503, "engine_unavailable", True),
        (errors.Throttled("queue full", status=429, **WHERE), 503, "engine_unavailable", True),
        (errors.TLSError("bad certificate", **WHERE), 503, "engine_unavailable", True),
        (errors.IndexNotFound("no such index", status=404, **WHERE), 503, "index_missing", True),
        (errors.IndexUnavailable("the index is red", status=503, **WHERE), 503, "index_unavailable", True),
        (errors.IndexWriteBlocked("notes is write-blocked", status=403, **WHERE), 503, "write_blocked", True),
        (errors.EngineTimeout("no answer in 10s", **WHERE), 504, "timeout", False),
        (asyncio.TimeoutError(), 504, "timeout", False),
        (errors.AuthenticationError("bad password", status=401, **WHERE), 502, "engine_auth", False),
        (errors.AuthorizationError("no privilege", status=403, **WHERE), 502, "engine_auth", False),
        (errors.EngineResponseError("boom", status=500, **WHERE), 502, "engine_error", False),
        (errors.RequestRejected("bad query", status=400, **WHERE), 422, "invalid_value", False),
        (
            errors.RequestRejected("no details", status=404, url="http://proxy", operation="detect engine"),
            502,
            "engine_error",
            False,
        ),
        (errors.ConfigError("unknown fusion method"), 422, "invalid_value", False),
        (errors.DimensionMismatch("384-d vectors, an 8-d model"), 409, "model_mismatch", False),
        (errors.AmbiguousAlias("alias 'notes' points to several indices"), 409, "alias_ambiguous", False),
        (errors.ModelUnavailable("gone", model="m"), 503, "model_unavailable", True),
        (KeyError("secret"), 500, "internal", False),
    ],
)
def test_each_error_has_its_status_kind_and_retry_after(
    exc: BaseException, status: int, kind: str, retry_after: bool
) -> None:
    answer = from_exception(exc, retry_after_s=9)
    assert (answer.status, answer.kind) == (status, kind)
    assert ("Retry-After" in answer.headers) is retry_after
    if retry_after:
        assert answer.headers["Retry-After"] == "9"


def test_an_unexpected_error_says_nothing_of_itself() -> None:
    answer = from_exception(ValueError("password=hunter2"), retry_after_s=1)
    assert "hunter2" not in answer.message
    assert "ValueError" not in answer.message


def test_a_service_error_passes_unchanged() -> None:
    original = ServiceError(404, "not_found", "gone")
    assert from_exception(original, retry_after_s=1) is original
