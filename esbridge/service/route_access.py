"""What every route shares: the API key checks (FastAPI dependencies), the app state it reads, and the error
answers the OpenAPI document lists."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from esbridge.config.settings import Settings
from esbridge.service.auth import KeyRing
from esbridge.service.backend import Backend
from esbridge.service.errors import ServiceError
from esbridge.service.metrics import Metrics
from esbridge.service.models import ErrorResponse

BEARER = HTTPBearer(auto_error=False, description="an API key: Authorization: Bearer <key>")
KEY_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")


def error_doc(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


COMMON: dict[int | str, dict[str, Any]] = {
    401: error_doc("no API key, or one that is not accepted"),
    403: error_doc("the API key lacks the scope this route needs (forbidden)"),
    408: error_doc("the body did not all arrive within service.request_timeout_s (body_timeout)"),
    413: error_doc("the body is larger than service.max_body_bytes"),
    422: error_doc("the request is invalid; error.fields says where"),
    429: error_doc("over the key's rate limit, or the service is at capacity; retry after Retry-After seconds"),
    500: error_doc("an unexpected error (details in the service log only)"),
    502: error_doc("the engine refused esbridge's credentials or answered with an error"),
    503: error_doc("the engine or the index is not available; retry after Retry-After seconds"),
    504: error_doc("no answer within service.request_timeout_s"),
}
WRITES: dict[int | str, dict[str, Any]] = {
    **COMMON,
    403: error_doc("the key lacks the write scope, or writes are disabled: no API keys are configured"),
    409: error_doc(
        "the index is attached (not created by esbridge): the sidecar does not write to it (read_only_index); or the "
        "alias points to several indices, of which a write would reach one (alias_ambiguous); or the index's vectors "
        "were made by another model (model_mismatch)"
    ),
}
NOT_JSON: dict[int | str, dict[str, Any]] = {
    400: error_doc("the body is not valid JSON (invalid_json)"),
    415: error_doc("the body is not sent as Content-Type: application/json (unsupported_media_type)"),
}


def settings_of(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def backend_of(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


def metrics_of(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def _check(request: Request, bearer: HTTPAuthorizationCredentials | None, header: str | None, scope: str) -> None:
    keys: KeyRing = request.app.state.keys
    given = bearer.credentials if bearer is not None else header
    grant = keys.grant(given)
    if grant is None:
        message = "an API key is required" if given is None else "the API key is not accepted"
        if given is None and request.headers.get("authorization"):  # Basic, a bare key, ...: not shown, it may be one
            message += "; the Authorization header is read only as 'Bearer <key>' (or send X-API-Key: <key>)"
        raise ServiceError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
    if not grant.allows(scope):
        held = ", ".join(sorted(grant.scopes))
        raise ServiceError(403, "forbidden", f"the API key has scope(s) {held}; this route needs {scope}")


def may_read(request: Request, bearer: HTTPAuthorizationCredentials | None, header: str | None) -> bool:
    """Whether the caller may search: reads are open, or it presents a key with the read scope."""
    if not settings_of(request).service.reads_need_key:
        return True
    keys: KeyRing = request.app.state.keys
    grant = keys.grant(bearer.credentials if bearer is not None else header)
    return grant is not None and grant.allows("read")


async def require_read(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    header: Annotated[str | None, Security(KEY_HEADER)],
) -> None:
    if settings_of(request).service.reads_need_key:
        _check(request, bearer, header, "read")


async def require_write(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    header: Annotated[str | None, Security(KEY_HEADER)],
) -> None:
    keys: KeyRing = request.app.state.keys
    if not keys.configured:
        raise ServiceError(
            403,
            "writes_disabled",
            "writes are disabled until API keys are configured (ESBRIDGE_API_KEYS or service.api_keys_file)",
        )
    _check(request, bearer, header, "write")


async def require_admin(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    header: Annotated[str | None, Security(KEY_HEADER)],
) -> None:
    _check(request, bearer, header, "admin")
