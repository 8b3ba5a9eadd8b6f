"""Prometheus metrics of one app, in its own registry (so two apps in one process do not mix).

- ``esbridge_http_request_duration_seconds{route,method,status}``: latency per route template;
- ``esbridge_search_stage_duration_seconds{stage}``: the pipeline's own stage timings (bm25, embed,
  knn, graph, rerank, ...), from ``SearchResponse.details["timings_ms"]``;
- ``esbridge_errors_total{kind}``: error answers by kind (see ``esbridge.service.errors``);
- ``esbridge_searches_total{search_mode}``: answered searches by mode (hybrid, lexical-only, ...).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
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

    def observe_search(self, response: SearchResponse) -> None:
        self.searches.labels(search_mode=response.search_mode).inc()
        timings = response.details.get("timings_ms", {})
        if isinstance(timings, Mapping):
            for stage, ms in timings.items():
                if isinstance(ms, (int, float)):
                    self.stages.labels(stage=str(stage)).observe(ms / 1000)
        self.stages.labels(stage="total").observe(response.took_ms / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestTimer:
    """Times every HTTP request and labels it with the route template it matched (never the raw path)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # path_format drops converters ("{doc_id:path}" is labelled "{doc_id}", as in the OpenAPI document).
            route = getattr(scope.get("route"), "path_format", None) or "unmatched"
            self.metrics.requests.labels(route=route, method=scope["method"], status=str(status)).observe(
                time.perf_counter() - started
            )
