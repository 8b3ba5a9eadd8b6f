"""Synchronous engine connections that refuse an answer cut off in its headers.

urllib3 reads an answer whose connection closed before its headers ended as complete: the status, the headers read
so far, and (with neither ``Content-Length`` nor ``Transfer-Encoding`` among them) a body read to the close, empty.
The clients would hand back an empty body as the engine's answer, which later reads as "no index" or a malformed
search. Elasticsearch and OpenSearch frame every answer, so an unframed, empty answer was cut off, unless HTTP
defines it bodiless (to HEAD, or a 204 or 304): these connections raise the client's own connection error for it,
which the adapters translate as they do the async clients' (``EngineUnavailable``, "an answer cut off after its
headers"). Each attempt also waits no longer than the calling thread's deadline (``call_deadline``), if it has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import elastic_transport
from opensearchpy import Urllib3HttpConnection
from opensearchpy import exceptions as ox

from esbridge.engines.call_deadline import attempt_timeout

if TYPE_CHECKING:  # a private module of elastic-transport: named for typing only
    from elastic_transport._node import NodeApiResponse

# Answers that have no body by definition (RFC 9110), framed or not: one read as cut off would be retried.
_BODILESS = frozenset({204, 304})


def cut_off(method: str, status: int, headers: Mapping[str, str], body: Any) -> str | None:
    """Why the answer was cut off, or None when it is whole (``headers`` is case-insensitive)."""
    framed = "content-length" in headers or "transfer-encoding" in headers
    if method.upper() == "HEAD" or status in _BODILESS or framed or body:
        return None
    return f"an answer cut off after its headers (HTTP {status})"


class CheckedUrllib3Connection(Urllib3HttpConnection):
    """opensearch-py's default connection, refusing an answer cut off in its headers."""

    def perform_request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        kwargs["timeout"] = attempt_timeout(kwargs.get("timeout") or self.timeout)
        status, headers, data = super().perform_request(method, url, *args, **kwargs)
        reason = cut_off(method, status, headers, data)
        if reason is not None:
            raise ox.ConnectionError("N/A", reason, ConnectionAbortedError(reason))  # info: what the message quotes
        return status, headers, data


class CheckedUrllib3Node(elastic_transport.Urllib3HttpNode):
    """elastic-transport's default synchronous node, refusing an answer cut off in its headers."""

    def perform_request(self, method: str, target: str, *args: Any, **kwargs: Any) -> NodeApiResponse:
        given = kwargs.get("request_timeout", self.config.request_timeout)
        if given is not None and not isinstance(given, (int, float)):  # the transport's DEFAULT: the node's own
            given = self.config.request_timeout
        kwargs["request_timeout"] = attempt_timeout(given)
        answer = super().perform_request(method, target, *args, **kwargs)
        reason = cut_off(method, answer.meta.status, answer.meta.headers, answer.body)
        if reason is not None:
            raise elastic_transport.ConnectionError(reason)
        return answer
