"""Limits enforced before any route runs: the request body size, per-key rates and concurrency.

- ``BodyLimit``: a declared ``Content-Length`` over the limit is refused at once; a body without one
  (chunked) is read up to the limit and refused as soon as it goes over, so no request can make the
  service buffer more. It reads the whole body before admission, so a client that sends its body slowly,
  or never finishes it, holds no slot; one whose body has not arrived within ``timeout_s`` gets 408. Bodies
  read at once are capped per client address (``per_client``) and in all (``at_once``), so the bodies that
  wait bound memory (``at_once`` x ``max_bytes``) and a client that never finishes its bodies locks out
  only itself; over either cap, 429 at once. A request with an accepted API key is counted under its key,
  not its address, so unkeyed senders on the same address (every local process on loopback) cannot lock
  keyed clients out. A compressed body (``Content-Encoding``) is refused (415) unread. ``on_refusal`` is
  told each refusal's status and kind (the metrics count a 429 as a rejection too).
- ``Admission`` (``/v1/*`` only, so health, readiness and metrics stay answerable under overload): a
  token bucket per API key (per client address without an accepted key) refuses a caller over its rate,
  and a concurrency gate lets ``max_concurrency`` requests run with at most ``max_queue`` waiting, each
  for at most ``queue_timeout_s``. A request whose expected wait (its place in the queue times the
  recent time a request holds its slot, over the slots) is longer than that is refused on arrival
  rather than after waiting in vain. Refusals are 429 with ``Retry-After``; nothing waits without bound.
- ``answer_time_s``: the part of a request's time (``request_timeout_s``) a search keeps for answering.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from esbridge.query.deadline import within
from esbridge.service.auth import KeyRing, presented_key
from esbridge.service.errors import error_body


class BodyLimit:
    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        timeout_s: float,
        *,
        keys: KeyRing,
        per_client: int,
        at_once: int,
        on_refusal: Callable[[int, str], None] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.keys = keys
        self.per_client, self.at_once = per_client, at_once
        self.on_refusal = on_refusal
        self._reading: dict[str, int] = {}  # bodies being read, per caller (one event loop: no lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and {b"content-length", b"transfer-encoding"} <= {
            key for key, _ in scope["headers"]
        }:
            # Uvicorn reads the body as chunked; a proxy in front that reads Content-Length would see another request
            # end, and pass what follows as a request of its own (request smuggling). Refused, the connection closed.
            message = "the request has both Content-Length and Transfer-Encoding, which may be read two ways: send one"
            await self._refuse(scope, send, 400, "bad_request", message, {"Connection": "close"})
            return
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._too_large(scope, send)
            return
        encoding = (_first(scope, b"content-encoding") or "identity").strip().lower()
        if encoding != "identity":
            message = f"the body must be sent uncompressed (Content-Encoding {encoding} is not supported)"
            await self._refuse(scope, send, 415, "unsupported_media_type", message, {"Connection": "close"})
            return
        client = caller(scope, self.keys)
        over = "in all" if sum(self._reading.values()) >= self.at_once else None
        if self._reading.get(client, 0) >= self.per_client:
            over = "for this API key" if client.startswith("key:") else "from this client address"
        if over is not None:
            limit = self.at_once if over == "in all" else self.per_client
            message = (
                f"too many request bodies are arriving at once {over} (at most {limit}); retry when one is in "
                "(the caps grow with service.max_concurrency and service.max_queue)"
            )
            await self._refuse(
                scope, send, 429, "too_many_bodies", message, {"Retry-After": "1", "Connection": "close"}
            )
            return
        self._reading[client] = self._reading.get(client, 0) + 1
        try:
            async with within(self.timeout_s):
                body = await self._read(receive)
        except (asyncio.TimeoutError, TimeoutError):
            message = f"the request body did not arrive within {self.timeout_s:g} s"
            await self._refuse(scope, send, 408, "body_timeout", message, {"Connection": "close"})
            return
        finally:
            left = self._reading[client] - 1
            if left:
                self._reading[client] = left
            else:
                del self._reading[client]
        if body is None:  # the client went away: nothing to answer, and no fault of the service's
            scope.setdefault("state", {})["error_kind"] = "client_closed"
            return
        if len(body) > self.max_bytes:
            await self._too_large(scope, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The body, None if the client went away, or the first ``max_bytes + 1`` or more bytes once it goes over."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            if size > self.max_bytes or not message.get("more_body", False):
                return b"".join(chunks)

    async def _too_large(self, scope: Scope, send: Send) -> None:
        await self._refuse(
            scope,
            send,
            413,
            "body_too_large",
            f"the request body is larger than {self.max_bytes} bytes (service.max_body_bytes)",
        )

    async def _refuse(
        self, scope: Scope, send: Send, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        if self.on_refusal is not None:
            self.on_refusal(status, kind)
        await send_error(scope, send, status, kind, message, headers)


async def send_error(
    scope: Scope, send: Send, status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> None:
    """An error answer in the service's shape, from middleware; the access log line gets its kind."""
    scope.setdefault("state", {})["error_kind"] = kind
    payload = json.dumps(error_body(kind, message)).encode()
    extra = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _first(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name``, as the routes read it (a request may send a header twice)."""
    value = next((value for key, value in scope["headers"] if key == name), b"")
    return value.decode("latin-1") or None


def caller(scope: Scope, keys: KeyRing) -> str:
    """Whom a request counts against: its accepted key (by the key's digest, never the key), else its address."""
    key = presented_key(_first(scope, b"authorization"), _first(scope, b"x-api-key"))
    grant = keys.grant(key) if key is not None else None
    if grant is not None:
        return f"key:{grant.id}"
    client: Any = scope.get("client")
    return f"client:{client[0] if client else 'unknown'}"


def refill(tokens: float, elapsed_s: float, rate: float, burst: float) -> float:
    """A token bucket's tokens after ``elapsed_s`` (Turner, "New directions in communications", 1986)."""
    return min(burst, tokens + max(0.0, elapsed_s) * rate)


class TokenBuckets:
    """One bucket per caller, ``burst`` tokens refilled at ``rate`` per second; the least recently seen are
    forgotten beyond ``max_callers`` (a forgotten caller starts with a full bucket again)."""

    def __init__(
        self, rate: float, burst: int, *, max_callers: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self.max_callers, self.clock = rate, float(burst), max_callers, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, caller: str) -> float:
        """0 when ``caller`` may go now (a token is taken), else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens, then = self._buckets.pop(caller, (self.burst, now))
        tokens = refill(tokens, now - then, self.rate, self.burst)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate
        self._buckets[caller] = (tokens - 1 if wait == 0 else tokens, now)
        if len(self._buckets) > self.max_callers:
            self._buckets.popitem(last=False)
        return wait


class ConcurrencyGate:
    """At most ``limit`` holders; up to ``queue`` more wait in arrival order, each for a bounded time."""

    def __init__(self, limit: int, queue: int, *, smoothing: float = 0.1) -> None:
        self.limit, self.queue, self.smoothing = limit, queue, smoothing
        self.active = 0
        self.hold_s = 0.0  # exponentially weighted mean of how long a request holds its slot
        self._waiters: deque[asyncio.Future[None]] = deque()

    def observe(self, held_s: float) -> None:
        self.hold_s = held_s if self.hold_s == 0 else self.hold_s + self.smoothing * (held_s - self.hold_s)

    def expected_wait_s(self, place: int) -> float:
        """How long the ``place``-th in the queue (from 1) can expect to wait for a slot."""
        return place * self.hold_s / self.limit

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self, timeout_s: float) -> str | None:
        """None once a slot is held (release it), else why not: ``queue_full`` or ``queue_timeout``."""
        if self.active < self.limit and not self._waiters:
            self.active += 1
            return None
        if len(self._waiters) >= self.queue:
            return "queue_full"
        if self.expected_wait_s(len(self._waiters) + 1) > timeout_s:
            return "expected_wait"
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            done, _ = await asyncio.wait({waiter}, timeout=timeout_s)
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise
        if done:
            return None
        self._abandon(waiter)
        return "queue_timeout"

    def release(self) -> None:
        """Hand the slot to the longest waiter, or free it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.active -= 1

    def _abandon(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done() and not waiter.cancelled():
            self.release()  # the slot was handed over just as the wait ended: pass it on
            return
        waiter.cancel()
        self._waiters.remove(waiter)


class Admission:
    """Rate limits and the concurrency gate in front of ``/v1/*``; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: KeyRing,
        buckets: TokenBuckets,
        gate: ConcurrencyGate,
        queue_timeout_s: float,
        on_rejection: Callable[[str], None],
    ) -> None:
        self.app, self.keys, self.buckets, self.gate = app, keys, buckets, gate
        self.queue_timeout_s = queue_timeout_s
        self.on_rejection = on_rejection

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        wait = self.buckets.take(caller(scope, self.keys))
        if wait > 0:
            await self._refuse(scope, send, "rate_limited", "too many requests for this API key (or client)", wait)
            return
        reason = await self.gate.acquire(self.queue_timeout_s)
        if reason is not None:
            why = {
                "queue_full": "the queue is full",
                "expected_wait": f"the wait for a slot would be longer than {self.queue_timeout_s:g} s",
                "queue_timeout": f"no slot within {self.queue_timeout_s:g} s",
            }[reason]
            wait = self.gate.expected_wait_s(self.gate.waiting + 1)
            await self._refuse(scope, send, reason, f"the service is at capacity: {why}", wait)
            return
        began = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.gate.observe(time.perf_counter() - began)
            self.gate.release()

    async def _refuse(self, scope: Scope, send: Send, reason: str, message: str, wait_s: float) -> None:
        self.on_rejection(reason)
        kind = "rate_limited" if reason == "rate_limited" else "overloaded"
        retry = str(max(1, math.ceil(wait_s)))
        await send_error(scope, send, 429, kind, f"{message}; retry after {retry} s", {"Retry-After": retry})


def answer_time_s(request_timeout_s: float) -> float:
    """What a search keeps of its request's time to build and send its answer: its stages give up that much
    before the request would answer 504, so a slow one costs its part of the answer, with a warning, not all."""
    return min(1.0, request_timeout_s / 10)
