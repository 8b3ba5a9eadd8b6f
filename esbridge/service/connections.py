"""Uvicorn's HTTP protocol with a deadline for a request's headers, and malformed HTTP answered in JSON.

A request uvicorn cannot parse never reaches the app; uvicorn answers it 400 in plain text itself. Here the
answer has the service's error shape (``bad_request``) and an ``X-Request-ID``, as every other answer has.

Uvicorn times out only a kept-alive connection that stays silent after an answer; it waits without bound for a
connection that never sends anything, or sends its headers a byte at a time, so such clients (slowloris) could
hold open connections until the process runs out of file descriptors. ``BodyLimit`` bounds a body only once its
headers are in. Here, each connection gets ``timeout_s`` from when it opens, and again from each answer, for
the next request's headers to arrive; a request whose headers arrived is never cut by it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from esbridge.service.errors import error_body


class _HeaderDeadline:
    """Mixed into uvicorn's HTTP protocol class (h11 or httptools, as uvicorn would choose)."""

    header_timeout_s: float
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._expire, self.cycle)

    def _expire(self, armed: Any) -> None:
        """Close the connection unless a request's headers arrived since the deadline was armed (a new cycle),
        or the request it was armed during is still being answered."""
        waiting = self.cycle is armed and (armed is None or armed.response_complete)
        if waiting and not self.transport.is_closing():
            self.transport.close()


class _JsonBadRequest:
    """Mixed into uvicorn's HTTP protocol class: its 400 for bytes that are not HTTP, as JSON. Uvicorn closes the
    connection after it, so the answer is written whole, past the parser's state."""

    transport: asyncio.Transport

    def send_400_response(self, msg: str) -> None:
        body = json.dumps(error_body("bad_request", "the request is not valid HTTP")).encode()
        head = (
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nx-request-id: {uuid.uuid4().hex}\r\nconnection: close\r\n"
            "cache-control: no-store\r\nx-content-type-options: nosniff\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()


def header_deadline_protocol(timeout_s: float) -> type[asyncio.Protocol]:
    """Uvicorn's HTTP protocol class, with ``timeout_s`` for each request's headers to arrive and malformed HTTP
    answered in JSON."""
    bases = (_JsonBadRequest, _HeaderDeadline, AutoHTTPProtocol)
    return type("HeaderDeadlineProtocol", bases, {"header_timeout_s": timeout_s})
