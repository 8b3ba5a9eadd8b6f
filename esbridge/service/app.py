"""The ASGI app of the sidecar, and running it with uvicorn.

One app holds one ``Backend`` for its lifetime (engine clients with their connection pools, the
searcher, the embedding model loaded once in a worker thread at start-up). Uvicorn stops accepting
connections on SIGTERM/SIGINT and lets in-flight requests finish (up to ``service.shutdown_timeout_s``)
before the lifespan closes the engine clients.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from esbridge import __version__
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.service import errors
from esbridge.service.auth import KeyRing
from esbridge.service.backend import opened
from esbridge.service.cors import ServiceCORS
from esbridge.service.limits import BodyLimit
from esbridge.service.metrics import Metrics, RequestTimer
from esbridge.service.routes import router


def create_app(settings: Settings, *, embedder: Embedder | None = None, load_model: bool = True) -> FastAPI:
    """The sidecar app. ``embedder`` is used as given (not closed); otherwise the configured model is
    loaded at start-up when ``load_model`` (and searches go lexical-only if it cannot load)."""
    keys = KeyRing.from_settings(settings.service)
    metrics = Metrics()

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
    app.state.metrics = metrics
    app.include_router(router)
    app.add_exception_handler(errors.ServiceError, errors.on_service_error)
    app.add_exception_handler(RequestValidationError, errors.on_validation_error)
    app.add_exception_handler(StarletteHTTPException, errors.on_http_error)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.service.max_body_bytes,
        on_refusal=lambda: metrics.errors.labels(kind="body_too_large").inc(),
    )
    app.add_middleware(RequestTimer, metrics=metrics)
    if settings.service.cors_origins:
        app.add_middleware(
            ServiceCORS,
            origins=settings.service.cors_origins,
            methods=["GET", "POST", "DELETE"],
            headers=["Authorization", "X-API-Key", "Content-Type"],
            on_refusal=lambda: metrics.errors.labels(kind="cors_refused").inc(),
        )
    return app


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Run the sidecar with uvicorn until SIGTERM or SIGINT."""
    import uvicorn

    config = uvicorn.Config(
        create_app(settings),
        host=settings.service.host,
        port=settings.service.port,
        log_level=log_level,
        timeout_graceful_shutdown=int(settings.service.shutdown_timeout_s),
        proxy_headers=False,
        server_header=False,
    )
    uvicorn.Server(config).run()
