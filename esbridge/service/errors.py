"""Every error answer of the service, made in one place: status, a stable ``kind``, a message, no traceback.

=========================================  ======  ========================================
what happened                              status  kind
=========================================  ======  ========================================
the body is not valid JSON                 400     invalid_json
the body is not sent as JSON (Content-Type) 415    unsupported_media_type
a field is missing, malformed or too big   422     validation
settings-level value refused (fusion)      422     invalid_value
query model is not the index's model       409     model_mismatch (another model or dimension)
a write to an alias over several indices   409     alias_ambiguous
body larger than ``max_body_bytes``        413     body_too_large
body not all received in the request time  408     body_timeout
no or unknown API key                      401     unauthorized
the key lacks the scope the route needs    403     forbidden
write with no API keys configured          403     writes_disabled
over the key's (or client's) rate limit    429     rate_limited (with Retry-After)
at capacity: queue full or no slot in time  429     overloaded (with Retry-After)
too many bodies arriving at once            429     too_many_bodies (with Retry-After)
CORS preflight refused (origin, method)    403     cors_refused
Host not loopback while reads need no key  403     host_refused (DNS rebinding, see hosts.py)
document to delete does not exist          404     not_found
engine unreachable, overloaded             503     engine_unavailable (with Retry-After)
index (alias) missing on the engine        503     index_missing (with Retry-After)
shards of the index have no active copy    503     index_unavailable (with Retry-After)
index write-blocked (a reindex is running) 503     write_blocked (with Retry-After)
engine or request timeout, no answer       504     timeout
a write timed out and was stopped, or not  504     write_cancelled / write_still_running
engine refused esbridge's credentials      502     engine_auth
engine answered with an error              502     engine_error
the embedding model failed                 503     model_unavailable (with Retry-After)
anything else                              500     internal (logged with its traceback)
=========================================  ======  ========================================

A missing index is a deployment state (run ``esbridge index create`` or ingest), not a fault of the
request, so it is a 503 like an engine that is not there yet.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from esbridge import errors
from esbridge.ingest.json_lines import NotJsonValue, strict_loads

log = logging.getLogger("esbridge.service")


class ServiceError(Exception):
    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        fields: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})
        self.fields = list(fields)


def error_body(kind: str, message: str, fields: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    return {
        "error": {
            "kind": kind,
            "message": message,
            "fields": [{"field": where, "message": what} for where, what in fields],
        }
    }


# Engine refusals that come from what the request asked: a malformed or too large query.
_REQUEST_FAULTS = (None, 400, 413)


def from_exception(exc: BaseException, retry_after_s: int) -> ServiceError:
    """The answer to ``exc``; unexpected exceptions become a bare 500 (their details go to the log only)."""
    retry = {"Retry-After": str(retry_after_s)}
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, (errors.EngineTimeout, asyncio.TimeoutError, TimeoutError)):
        message = str(exc) if isinstance(exc, errors.EngineTimeout) else "no answer in time"
        return ServiceError(504, "timeout", message)
    if isinstance(exc, errors.IndexNotFound):
        return ServiceError(503, "index_missing", str(exc), headers=retry)
    if isinstance(exc, errors.IndexWriteBlocked):
        return ServiceError(503, "write_blocked", str(exc), headers=retry)
    if isinstance(exc, errors.IndexUnavailable):  # shards without an active copy: a node is down or recovering
        return ServiceError(503, "index_unavailable", str(exc), headers=retry)
    if isinstance(exc, (errors.EngineUnavailable, errors.Throttled)):
        return ServiceError(503, "engine_unavailable", str(exc), headers=retry)
    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return ServiceError(502, "engine_auth", f"the engine refused esbridge's credentials: {exc}")
    if isinstance(exc, (errors.ModelMismatch, errors.DimensionMismatch)):
        return ServiceError(409, "model_mismatch", str(exc))
    if isinstance(exc, errors.AmbiguousAlias):
        return ServiceError(409, "alias_ambiguous", str(exc))
    if isinstance(exc, errors.RequestRejected) and exc.status not in _REQUEST_FAULTS:
        # e.g. 404 to GET / while detecting the engine: the URL leads to something else, whatever was asked
        return ServiceError(502, "engine_error", str(exc))
    if isinstance(exc, (errors.ConfigError, errors.UnsupportedFeature, errors.RequestRejected)):
        return ServiceError(422, "invalid_value", str(exc))
    if isinstance(exc, errors.EngineError):
        return ServiceError(502, "engine_error", str(exc))
    if isinstance(exc, errors.EmbeddingError):
        return ServiceError(503, "model_unavailable", str(exc), headers=retry)
    log.error("unexpected error", exc_info=exc)
    return ServiceError(500, "internal", "internal error; the service log has the details")


def respond(request: Request, error: ServiceError) -> JSONResponse:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.errors.labels(kind=error.kind).inc()
    request.state.error_kind = error.kind
    return JSONResponse(error_body(error.kind, error.message, error.fields), error.status, headers=error.headers)


class StrictJsonRequest(Request):
    """A request whose JSON body is read as a JSONL line is: NaN, Infinity and 1e999, which Python's json reads and
    JSON does not have (an upsert would store them as the strings "nan" and "inf"), are refused."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_loads(await self.body())
        return self._json


class GuardedRoute(APIRoute):
    """A route whose every exception becomes an error answer here, never a traceback; its body is read strictly."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            request = StrictJsonRequest(request.scope, request.receive)
            try:
                return await handler(request)
            except (RequestValidationError, StarletteHTTPException):
                raise
            except Exception as exc:
                return respond(request, from_exception(exc, request.app.state.settings.service.retry_after_s))

        return guarded


async def on_service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return respond(request, exc)


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    found = exc.errors()
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if not _is_json(media_type) and any(_unread_body(error) for error in found):
        # FastAPI reads a body as JSON only when its Content-Type says so; any other reaches validation as bytes.
        given = f"not {media_type}" if media_type else "none was given"
        message = f"the body must be JSON sent with Content-Type: application/json ({given})"
        return respond(request, ServiceError(415, "unsupported_media_type", message))
    if len(found) == 1 and found[0].get("type") == "json_invalid":
        return respond(request, invalid_json(_decode_error(found[0], exc.body)))
    query_chars = request.app.state.settings.service.max_query_chars
    fields = [(_where(error.get("loc", ())), _message(error, query_chars)) for error in exc.errors()]
    message = "; ".join(f"{where}: {what}" for where, what in fields) or "invalid request"
    return respond(request, ServiceError(422, "validation", message, fields=fields))


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    # FastAPI answers 400 for a body that json.loads fails on other than with JSONDecodeError; the cause says why.
    if exc.status_code == 400 and isinstance(exc.__cause__, (ValueError, RecursionError)):
        return respond(request, invalid_json(_parse_failure(exc.__cause__)))
    kinds = {404: "not_found", 405: "method_not_allowed"}
    return respond(
        request,
        ServiceError(exc.status_code, kinds.get(exc.status_code, "http"), str(exc.detail), headers=exc.headers),
    )


def _unread_body(error: Mapping[str, Any]) -> bool:
    """Whether ``error`` is about a body as a whole that is there (not missing) but was not read as JSON."""
    return tuple(error.get("loc", ())) == ("body",) and error.get("type") != "missing"


def _is_json(media_type: str) -> bool:
    """Whether FastAPI parses a body of ``media_type`` as JSON (``application/json`` or ``application/*+json``)."""
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def invalid_json(reason: str) -> ServiceError:
    return ServiceError(400, "invalid_json", f"the body is not valid JSON: {reason}")


def _decode_error(error: Mapping[str, Any], document: Any) -> str:
    """Where and why decoding failed, as ``json.JSONDecodeError`` words it (FastAPI keeps only its parts)."""
    reason = str(error.get("ctx", {}).get("error", "decoding failed"))
    loc = error.get("loc", ())
    position = loc[1] if len(loc) > 1 else None
    if not isinstance(position, int) or not isinstance(document, str):
        return reason
    line = document.count("\n", 0, position) + 1
    column = position - document.rfind("\n", 0, position)
    return f"{reason} at line {line}, column {column} (char {position})"


def _parse_failure(cause: BaseException) -> str:
    if isinstance(cause, RecursionError):
        return "it is nested too deeply"
    if isinstance(cause, NotJsonValue):
        return str(cause)
    if isinstance(cause, UnicodeDecodeError):
        return f"it is not UTF-8 (byte {cause.start})"
    digits = _TOO_MANY_DIGITS.search(str(cause))  # Python's limit on converting a decimal string to an int
    if digits is not None:
        return f"a number in it has {digits['given']} digits, more than the {digits['limit']} it may have"
    return "it cannot be parsed"


_TOO_MANY_DIGITS = re.compile(r"limit \((?P<limit>\d+) digits\).*value has (?P<given>\d+) digits")


def _where(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def _message(error: Mapping[str, Any], query_chars: int) -> str:
    if tuple(error.get("loc", ())) == ("body", "query") and error.get("type") == "string_too_long":
        # The model's own bound (4,096) is not the service's, which the route checks once the model has validated.
        return f"must have at most {query_chars} characters (service.max_query_chars)"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")
