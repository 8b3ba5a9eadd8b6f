"""Uvicorn's HTTP protocol with a deadline for a request's headers, a cap on connections per client address, and
malformed HTTP answered in JSON.

A request uvicorn cannot parse never reaches the app; uvicorn answers it 400 in plain text itself. Here the
answer has the service's error shape (``bad_request``) and an ``X-Request-ID``, as every other answer has.

Uvicorn times out only a kept-alive connection that stays silent after an answer; it waits without bound for a
connection that never sends anything, or sends its headers a byte at a time, so such clients (slowloris) could
hold open connections until the process runs out of file descriptors. ``BodyLimit`` bounds a body only once its
headers are in. Here, each connection gets ``timeout_s`` from when it opens, and again from each answer, for
the next request's headers to arrive; a request whose headers arrived is never cut by it.

Even so, one client address could open connections until none are left to the others (each costs a file
descriptor, and the process has a fixed number). Each address may hold ``service.max_connections_per_client``
open at once; a connection over it is answered 429 ``too_many_connections`` with ``Retry-After`` and
``Connection: close`` as soon as it opens and closed a second later (its bytes read and dropped meanwhile); it is
not counted.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
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


_REFUSED_LINGER_S = 1.0


class _ConnectionCap:
    """Mixed into uvicorn's HTTP protocol class, outside the header deadline: at most ``max_per_client`` connections
    open per client address (counts in ``open_per_client``, one dict per server, one event loop: no lock)."""

    max_per_client: int
    open_per_client: dict[str, int]
    on_refusal: Callable[[], None] | None
    _address: str | None = None
    _refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, (tuple, list)) and peer else "unknown"
        held = self.open_per_client.get(address, 0)
        if held < self.max_per_client:
            self._address, self.open_per_client[address] = address, held + 1
        super().connection_made(transport)  # type: ignore[misc]
        if held >= self.max_per_client:
            self._refuse(held)

    def data_received(self, data: bytes) -> None:
        if not self._refused:  # a refused connection's request is never read: it was answered already
            super().data_received(data)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._address is not None:
            left = self.open_per_client.get(self._address, 1) - 1
            if left > 0:
                self.open_per_client[self._address] = left
            else:
                self.open_per_client.pop(self._address, None)
            self._address = None
        super().connection_lost(exc)  # type: ignore[misc]

    def _refuse(self, held: int) -> None:
        self._refused = True
        if self.on_refusal is not None:
            self.on_refusal()
        message = (
            f"this client address has {held} connections open already, the most it may "
            "(service.max_connections_per_client); send requests over those, or retry once one has closed; "
            "retry after 1 s"
        )
        transport: asyncio.Transport = self.transport  # type: ignore[attr-defined]
        write_json(
            transport, 429, "Too Many Requests", error_body("too_many_connections", message), "retry-after: 1\r\n"
        )
        # Not counted, so closed soon whatever the client does; not at once: a request arriving just then, unread,
        # would make the close a reset, which the client may see instead of the answer.
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(_REFUSED_LINGER_S, transport.close)


def write_json(transport: asyncio.Transport, status: int, reason: str, body: Any, extra: str = "") -> None:
    """A whole answer of ``status`` with a JSON ``body``, saying the connection closes, written past the parser."""
    payload = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nx-request-id: {uuid.uuid4().hex}\r\nconnection: close\r\n"
        f"cache-control: no-store\r\nx-content-type-options: nosniff\r\n{extra}\r\n"
    )
    transport.write(head.encode("ascii") + payload)


class _JsonBadRequest:
    """Mixed into uvicorn's HTTP protocol class: its 400 for bytes that are not HTTP, as JSON. Uvicorn closes the
    connection after it, so the answer is written whole, past the parser's state."""

    transport: asyncio.Transport

    def send_400_response(self, msg: str) -> None:
        write_json(self.transport, 400, "Bad Request", error_body("bad_request", "the request is not valid HTTP"))
        self.transport.close()


def header_deadline_protocol(
    timeout_s: float, max_per_client: int, on_refusal: Callable[[], None] | None = None
) -> type[asyncio.Protocol]:
    """Uvicorn's HTTP protocol class, with ``timeout_s`` for each request's headers to arrive, at most
    ``max_per_client`` connections per client address (``on_refusal`` called for each refused) and malformed HTTP
    answered in JSON."""
    bases = (_ConnectionCap, _JsonBadRequest, _HeaderDeadline, AutoHTTPProtocol)
    # A function as a class attribute would be bound to each connection: kept as it is given.
    cap = {
        "max_per_client": max_per_client,
        "open_per_client": {},
        "on_refusal": staticmethod(on_refusal) if on_refusal else None,
    }
    return type("HeaderDeadlineProtocol", bases, {"header_timeout_s": timeout_s, **cap})
