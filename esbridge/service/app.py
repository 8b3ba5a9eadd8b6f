"""The ASGI app of the sidecar, and running it with uvicorn.

One app holds one ``Backend`` for its lifetime (engine clients with their connection pools, the
searcher, the embedding model loaded once in a worker thread at start-up). Uvicorn stops accepting
connections on SIGTERM/SIGINT and lets in-flight requests finish (up to ``service.shutdown_timeout_s``)
before the lifespan closes the engine clients; SIGHUP reads the API keys file again.

Middleware, outermost first: the request observer (request id, metrics, access log), the host check (where
reads need no key on loopback, or ``service.allowed_hosts`` lists names), CORS, the body limit (the whole body is
read here, within ``request_timeout_s``), admission (rate limits and the concurrency gate), then the routes.
"""

from __future__ import annotations

import logging
import math
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from esbridge import __version__
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.errors import ConfigError
from esbridge.query.models import SearchRequest
from esbridge.service import errors, ops_routes, routes
from esbridge.service.auth import KeyRing
from esbridge.service.backend import opened
from esbridge.service.cors import ServiceCORS
from esbridge.service.hosts import HostCheck, open_reads_warning
from esbridge.service.limits import Admission, BodyLimit, ConcurrencyGate, TokenBuckets
from esbridge.service.metrics import Metrics, RequestObserver, access_log
from esbridge.service.models import DocumentsRequest

if TYPE_CHECKING:
    import uvicorn


def create_app(settings: Settings, *, embedder: Embedder | None = None, load_model: bool = True) -> FastAPI:
    """The sidecar app. ``embedder`` is used as given (not closed); otherwise the configured model is
    loaded at start-up when ``load_model`` (and searches go lexical-only if it cannot load)."""
    service = settings.service
    keys = KeyRing.from_settings(service)
    metrics = Metrics()
    gate = ConcurrencyGate(service.max_concurrency, service.max_queue)
    metrics.queue_depth.set_function(lambda: gate.waiting)
    metrics.in_flight.set_function(lambda: gate.active)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with opened(
            settings,
            embedder,
            load_model=load_model,
            unloaded_problem="no embedding model is loaded: answered with BM25 only",
        ) as backend:
            app.state.backend = backend
            yield

    app = FastAPI(
        title="esbridge",
        version=__version__,
        summary="Hybrid search (BM25 + kNN, fused) over Elasticsearch, OpenSearch or the embedded engine",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.keys = keys
    app.openapi = lambda: _with_service_limits(app, settings)  # type: ignore[method-assign]
    app.state.metrics = metrics
    app.include_router(routes.router)
    app.include_router(ops_routes.router)
    app.add_exception_handler(errors.ServiceError, errors.on_service_error)
    app.add_exception_handler(RequestValidationError, errors.on_validation_error)
    app.add_exception_handler(StarletteHTTPException, errors.on_http_error)

    def rejected(reason: str) -> None:
        metrics.rejections.labels(reason=reason).inc()
        metrics.errors.labels(kind="rate_limited" if reason == "rate_limited" else "overloaded").inc()

    app.add_middleware(
        Admission,
        keys=keys,
        buckets=TokenBuckets(service.rate_limit_per_s, service.rate_limit_burst),
        gate=gate,
        queue_timeout_s=service.queue_timeout_s,
        on_rejection=rejected,
    )
    # Outside admission: a body that arrives slowly, or never, holds no slot while it does. A client may have
    # four times as many bodies arriving as the gate lets in and queues (room for bursts), and so may each
    # accepted key; all together, four times that.
    per_client = 4 * (service.max_concurrency + service.max_queue)
    app.add_middleware(
        BodyLimit,
        max_bytes=service.max_body_bytes,
        timeout_s=service.request_timeout_s,
        keys=keys,
        per_client=per_client,
        at_once=4 * per_client,
        on_refusal=lambda status, kind: refused_body(metrics, status, kind),
    )
    if service.cors_origins:
        app.add_middleware(
            ServiceCORS,
            origins=service.cors_origins,
            methods=["GET", "POST", "DELETE"],
            headers=["Authorization", "X-API-Key", "Content-Type"],
            on_refusal=lambda: metrics.errors.labels(kind="cors_refused").inc(),
        )
    if service.checks_host:  # see esbridge.service.hosts: DNS rebinding
        app.add_middleware(
            HostCheck,
            allowed=service.allowed_hosts,
            on_refusal=lambda: metrics.errors.labels(kind="host_refused").inc(),
        )
    app.add_middleware(RequestObserver, metrics=metrics, log=service.access_log, queries=service.log_queries)
    return app


def _with_service_limits(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The OpenAPI document with the bounds this service enforces on top of the models' own (which the CLI and
    the Python API share): a client generated from it then stays within them."""
    document = FastAPI.openapi(app)  # made once (and again if the routes change), then the same dict
    schemas = document["components"]["schemas"]
    search = schemas["SearchRequest"]["properties"]
    top_n_max = min(settings.service.max_top_n, settings.pipeline.top_n_max)
    search["query"]["maxLength"] = settings.service.max_query_chars  # at most the model's own 4,096
    search["top_n"].update(maximum=top_n_max, default=min(SearchRequest.model_fields["top_n"].default, top_n_max))
    documents = schemas["DocumentsRequest"]["properties"]["documents"]
    documents["maxItems"] = settings.service.max_documents
    documents["description"] = (
        f"{DocumentsRequest.model_fields['documents'].description}; at most {settings.service.max_documents} "
        "documents are written per request (service.max_documents): a registry record counts as its own document "
        "and one per tool and skill"
    )
    service = settings.service
    document["info"]["x-esbridge-limits"] = {  # what no schema keyword says: a client may read them before sending
        "max_body_bytes": service.max_body_bytes,
        "max_documents": service.max_documents,
        "max_query_chars": service.max_query_chars,
        "max_top_n": top_n_max,
        "request_timeout_s": service.request_timeout_s,
    }
    return document


def reload_keys_on_sighup(keys: KeyRing) -> None:
    """SIGHUP makes ``keys`` read its file again before the next key check (POSIX, main thread only)."""
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda signum, frame: keys.request_reload())


def _log_access_as_json_lines(level: str) -> None:
    """Access log lines go to stderr as they are (each one a JSON object), instead of uvicorn's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access_log.addHandler(handler)
    access_log.setLevel(logging.INFO if level in ("info", "debug") else logging.WARNING)
    access_log.propagate = False


def _log_service_events(level: str) -> None:
    """The service's own log lines (a write that answered 504 ending, the keys file read again, the engine
    closed with writes still running) go to stderr as uvicorn's do; without a handler, Python would drop
    those below a warning."""
    from uvicorn.logging import DefaultFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(DefaultFormatter("%(levelprefix)s %(message)s", use_colors=False))
    events = logging.getLogger("esbridge")
    events.handlers = [handler]
    events.setLevel(level.upper())
    events.propagate = False


def server_config(app: FastAPI, settings: Settings, *, log_level: str = "info") -> uvicorn.Config:
    """Uvicorn's settings for ``app``. Uvicorn's own access log stays off whatever ``service.access_log`` says:
    its lines carry the raw path and query string, which the service's log leaves out, and ``false`` means
    no access log at all. A request's headers must arrive within ``service.request_timeout_s``, as its body must."""
    import uvicorn

    from esbridge.service.connections import header_deadline_protocol

    return uvicorn.Config(
        app,
        host=settings.service.host,
        port=settings.service.port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=math.ceil(settings.service.shutdown_timeout_s),  # whole seconds, at least 1
        proxy_headers=False,
        server_header=False,
        http=header_deadline_protocol(
            settings.service.request_timeout_s,
            settings.service.connections_per_client,
            on_refusal=lambda: refused_connection(app),
        ),
    )


def refused_body(metrics: Metrics, status: int, kind: str) -> None:
    """A body refused before any route ran: an error answer by kind, and a 429 a rejection too, as all 429s are."""
    metrics.errors.labels(kind=kind).inc()
    if status == 429:
        metrics.rejections.labels(reason=kind).inc()


def refused_connection(app: FastAPI) -> None:
    metrics: Metrics = app.state.metrics
    metrics.rejections.labels(reason="too_many_connections").inc()
    metrics.errors.labels(kind="too_many_connections").inc()


def check_address(host: str, port: int) -> None:
    """Refuse an address the service cannot listen on (a port in use, a host that is no address of this machine)
    before the model loads: uvicorn logs its own line and exits 3. Each address is bound as asyncio binds it."""
    try:
        for family, kind, protocol, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            with socket.socket(family, kind, protocol) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                probe.bind(address)
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {host}:{port} (service.host, service.port): {exc.strerror or exc}"
        ) from exc


def start_warnings(settings: Settings, keys: KeyRing) -> list[str]:
    """What ``serve`` logs at start-up: short API keys, and open reads off loopback without a Host check."""
    service = settings.service
    found = [keys.short_keys_warning()]
    if not service.loopback:
        found.append(open_reads_warning(service.host, service.allowed_hosts, service.reads_need_key))
    return [warning for warning in found if warning is not None]


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Run the sidecar with uvicorn until SIGTERM or SIGINT."""
    import uvicorn

    app = create_app(settings)
    reload_keys_on_sighup(app.state.keys)
    _log_service_events(log_level)
    for warning in start_warnings(settings, app.state.keys):
        logging.getLogger("esbridge.service").warning(warning)
    if settings.service.access_log:
        _log_access_as_json_lines(log_level)
    uvicorn.Server(server_config(app, settings, log_level=log_level)).run()
