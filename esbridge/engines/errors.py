"""Turning an engine's HTTP answer into the esbridge error that names what went wrong.

Both adapters reduce their client library's exception to (status, body) and call ``from_response``;
only connection-level failures, which have no HTTP answer, are classified by the adapters themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from esbridge import errors

_LICENSE_MARKERS = ("license", "licence")


def error_type_and_reason(body: Any) -> tuple[str | None, str]:
    """The engine's error ``type`` and a one-line reason from an error response body of any shape."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            causes = error.get("root_cause")
            cause = causes[0] if isinstance(causes, list) and causes and isinstance(causes[0], Mapping) else {}
            kind = cause.get("type") or error.get("type")
            reason = cause.get("reason") or error.get("reason") or kind or "unknown error"
            return (str(kind) if kind else None), str(reason)
        if isinstance(error, str):
            return None, error
        if "message" in body:
            return None, str(body["message"])
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = str(body).strip() if body not in (None, "") else "no details in the response"
    return None, text[:500]


def from_response(
    status: int | None,
    body: Any,
    *,
    url: str,
    operation: str,
    index: str | None = None,
) -> errors.EngineError:
    """The esbridge error for an HTTP error answer."""
    kind, reason = error_type_and_reason(body)
    cls: type[errors.EngineError]
    if kind == "index_not_found_exception":
        cls = errors.IndexNotFound
    elif kind == "resource_already_exists_exception":
        cls = errors.IndexAlreadyExists
    elif kind == "time_exceeded_exception":
        # OpenSearch's answer when a request's own `timeout` runs out before any shard has results (a wildcard's
        # rewrite): the same event as Elasticsearch's empty `timed_out` answer, not a fault of the engine.
        cls = errors.EngineTimeout
        reason = "the request's `timeout` ran out before any shard had results (time_exceeded_exception)"
    elif status == 503 and "all shards failed" in reason:
        cls = errors.IndexUnavailable
        reason = (
            f"no shard of the index could answer ({kind or 'all shards failed'}): the index is red, its shards "
            "have no active copy (a node holding them is down, or they could not be allocated); "
            "GET _cluster/health/<index>?level=shards and GET _cluster/allocation/explain say which and why"
        )
    elif status == 401:
        cls = errors.AuthenticationError
    elif status == 403 and any(marker in reason.lower() for marker in _LICENSE_MARKERS):
        cls = errors.UnsupportedFeature
    elif status == 403:
        cls = errors.AuthorizationError
    elif status == 429:
        cls = errors.Throttled
    elif status == 404 and index is not None:
        cls = errors.IndexNotFound
    elif status is not None and 400 <= status < 500:
        cls = errors.RequestRejected
    else:
        cls = errors.EngineResponseError
    if kind and kind not in reason:
        reason = f"{kind}: {reason}"
    return cls(reason, url=url, operation=operation, index=index, status=status)


def no_answer(timeout_s: float, retries: int) -> str:
    """The reason of an EngineTimeout: how long each attempt waited, how many there were and the settings that say
    so, since a host that drops packets uses all of them up before the command can say anything."""
    attempts = f"{retries + 1} attempts" if retries else "1 attempt"
    return f"no answer within {timeout_s:g} s, {attempts} (settings timeout_s, retries)"


def tls_reason(text: str) -> str:
    """A TLS failure's reason with what an operator can do about the common ones; OpenSSL's words alone do not
    say that the server speaks plain HTTP, or which setting trusts a private CA."""
    upper = text.upper()
    if "WRONG_VERSION_NUMBER" in upper or "RECORD LAYER FAILURE" in upper:
        return f"{text}; the server may speak plain HTTP: try an http:// URL"
    if "MISMATCH" in upper or "DOESN'T MATCH" in upper:
        return f"{text}; the URL must name the server by a host name or address its certificate lists"
    if "CERTIFICATE_VERIFY_FAILED" in upper:
        return f"{text}; if the server's certificate is signed by a private CA, name its PEM file in tls.ca_certs"
    return text


# aiohttp's error for an answer cut off after (some of) its headers quotes the parsed message, every header in full.
_CUT_ANSWER = re.compile(r"<RawResponseMessage\(.*?\bcode=(\d+).*\)>", re.DOTALL)


def connection_reason(text: str) -> str:
    """A connection failure's reason without the headers of an answer cut off mid-way: a proxy's ``Set-Cookie`` among
    them would reach every caller of the service, in its error answers and ``/readyz``."""
    return _CUT_ANSWER.sub(lambda found: f"an answer cut off after its headers (HTTP {found[1]})", text)
