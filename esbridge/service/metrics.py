"""Prometheus metrics of one app, in its own registry (so two apps in one process do not mix).

- ``esbridge_http_request_duration_seconds{route,method,status}``: latency per route template;
- ``esbridge_search_stage_duration_seconds{stage}``: the pipeline's own stage timings (bm25, embed,
  knn, graph, rerank, ...), from ``SearchResponse.details.timings_ms`` of the searches that ran them;
- ``esbridge_errors_total{kind}``: error answers by kind (see ``esbridge.service.errors``);
- ``esbridge_searches_total{search_mode}``: answered searches by mode (hybrid, lexical-only, ...);
- ``esbridge_rejections_total{reason}``: 429 answers by reason (rate_limited, queue_full, expected_wait,
  queue_timeout, too_many_bodies, too_many_connections);
- ``esbridge_queue_depth`` and ``esbridge_requests_in_flight``: requests waiting for a slot and holding one;
- ``esbridge_search_cache_total{result}``: searches answered from the response cache (hit) or not (miss);
- ``esbridge_writes_running_after_timeout``: writes that answered 504 and have not stopped yet.

``RequestObserver`` also gives every request its id (``X-Request-ID``, the caller's when it is a sane
token, else a new one), echoes it in the answer and writes one JSON access log line per request.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from esbridge.query.models import SearchResponse

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            "esbridge_http_request_duration_seconds",
            "HTTP request latency by route template, method and status",
            ["route", "method", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "esbridge_search_stage_duration_seconds",
            "Search pipeline stage latency",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter("esbridge_errors", "Error answers by kind", ["kind"], registry=self.registry)
        self.searches = Counter("esbridge_searches", "Searches by search_mode", ["search_mode"], registry=self.registry)
        self.rejections = Counter("esbridge_rejections", "429 answers by reason", ["reason"], registry=self.registry)
        self.queue_depth = Gauge("esbridge_queue_depth", "Requests waiting for a slot", registry=self.registry)
        self.in_flight = Gauge("esbridge_requests_in_flight", "Requests holding a slot", registry=self.registry)
        self.cache = Counter(
            "esbridge_search_cache", "Searches answered from the response cache", ["result"], registry=self.registry
        )
        self.writes_running = Gauge(
            "esbridge_writes_running_after_timeout", "Writes answered 504 that have not stopped", registry=self.registry
        )

    def observe_search(self, response: SearchResponse) -> None:
        self.searches.labels(search_mode=response.search_mode).inc()
        self.cache.labels(result="hit" if response.details.cached else "miss").inc()
        if not response.details.cached:  # a cached answer keeps the timings of the search that made it
            for stage, ms in response.details.timings_ms.items():
                self.stages.labels(stage=stage).observe(ms / 1000)
        self.stages.labels(stage="total").observe(response.took_ms / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

access_log = logging.getLogger("esbridge.access")


def request_id(given: bytes | None) -> str:
    """The caller's ``X-Request-ID`` when it is a plain token of at most 128 characters, else a new one."""
    if given is not None:
        text = given.decode("latin-1")
        if _REQUEST_ID.fullmatch(text):
            return text
    return uuid.uuid4().hex


def access_line(
    scope: Scope, state: Mapping[str, Any], route: str, status: int, latency_s: float, *, queries: bool
) -> str:
    """One access log line: JSON, with no headers and no body text (the query only when ``queries``)."""
    client = scope.get("client")
    entry: dict[str, Any] = {
        "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "request_id": state.get("request_id"),
        "method": scope["method"],
        "route": route,
        "status": status,
        "latency_ms": round(latency_s * 1000, 2),
        "search_mode": state.get("search_mode"),
        "error": state.get("error_kind"),
        "client": client[0] if client else None,
    }
    if queries and "query" in state:
        entry["query"] = state["query"]
    return json.dumps(entry, ensure_ascii=False)


# Answers hold search results and error details: no cache in between keeps them, and no browser reads one as
# another type than it says (a JSON error echoing a value, read as HTML).
_STORE_NOTHING = ((b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"))
_SET_HERE = {b"x-request-id", *(name for name, _ in _STORE_NOTHING)}


class RequestObserver:
    """Times every HTTP request, labelled with the route template it matched (never the raw path), gives it
    a request id echoed as ``X-Request-ID`` and ``Cache-Control: no-store``, ``X-Content-Type-Options: nosniff``,
    and logs it (``log``: whether; ``queries``: with query text)."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        log: bool = True,
        queries: bool = False,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.log = log
        self.queries = queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        state: dict[str, Any] = scope.setdefault("state", {})
        rid = request_id(dict(scope["headers"]).get(b"x-request-id"))
        state["request_id"] = rid

        answered = False

        async def sending(message: Message) -> None:
            nonlocal status, answered
            if message["type"] == "http.response.start":
                status, answered = int(message["status"]), True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _SET_HERE]
                message = {**message, "headers": [*headers, (b"x-request-id", rid.encode()), *_STORE_NOTHING]}
            await send(message)

        try:
            await self.app(scope, receive, sending)
            if state.get("error_kind") == "client_closed" and not answered:
                status = 499  # as nginx logs a client that closed its request: not a 500 of the service's own
        finally:
            # path_format drops converters ("{doc_id:document_id}" is labelled "{doc_id}", as in the OpenAPI document).
            route = getattr(scope.get("route"), "path_format", None) or "unmatched"
            elapsed = time.perf_counter() - started
            method = scope["method"] if scope["method"] in _METHODS else "other"  # any token is a method to HTTP
            self.metrics.requests.labels(route=route, method=method, status=str(status)).observe(elapsed)
            if self.log and access_log.isEnabledFor(logging.INFO):
                access_log.info(access_line(scope, state, route, status, elapsed, queries=self.queries))
