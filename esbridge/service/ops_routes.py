"""The routes for operators: liveness, readiness, Prometheus metrics and the API keys' reload."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Security
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST

from esbridge.errors import (
    AmbiguousAlias,
    ConfigError,
    DimensionMismatch,
    EmbeddingError,
    EsbridgeError,
    IndexNotFound,
    IndexUnavailable,
    ModelMismatch,
)
from esbridge.service.auth import KeyRing
from esbridge.service.backend import Backend
from esbridge.service.errors import GuardedRoute, ServiceError
from esbridge.service.models import Health, KeysReloaded
from esbridge.service.route_access import (
    BEARER,
    COMMON,
    KEY_HEADER,
    backend_of,
    error_doc,
    may_read,
    metrics_of,
    require_admin,
    require_read,
)

router = APIRouter(route_class=GuardedRoute)


@router.get("/healthz", response_model=Health, response_model_exclude_none=True, summary="Alive")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses={503: {"model": Health, "description": "not ready; checks says why"}},
    summary="Ready",
)
async def readyz(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    header: Annotated[str | None, Security(KEY_HEADER)],
) -> Response:
    """Ready when the engine answers, the index exists and the embedding model is loaded, answers and may search it.

    Where searches need a key, a caller without one that may read learns only which checks failed: their reasons
    name the engine's URL, the index and the model."""
    backend = backend_of(request)
    answering = asyncio.ensure_future(backend.model_answers())  # alongside the engine's checks, not after them
    checks = {"engine": "ok", "index": "ok", "model": "ok"}
    partial = None  # searches answer from the shards that do, flagged: the sidecar stays in service
    try:
        partial = await backend.check_index()
        await backend.check_model()
    # Every search would answer 409 (model_mismatch, alias_ambiguous: an alias over indices of other models).
    except (ModelMismatch, DimensionMismatch, AmbiguousAlias) as exc:
        checks["model"] = str(exc)
    except EmbeddingError as exc:  # the searcher needs the re-ranker's model, which cannot load
        checks.update(engine="unknown", index="unknown", model=str(exc))
    except EsbridgeError as exc:
        kind = "index" if isinstance(exc, (IndexNotFound, IndexUnavailable)) else "engine"
        checks[kind] = str(exc)
        if kind == "engine":
            checks["index"] = "unknown"
    except (asyncio.TimeoutError, TimeoutError):
        checks["engine"] = "no answer within 5s"
        checks["index"] = "unknown"
    not_answering = await answering
    if checks["model"] == "ok":
        checks["model"] = _model_problem(backend) or not_answering or "ok"
    ready = all(value == "ok" for value in checks.values())
    if not may_read(request, bearer, header):
        checks = {name: "ok" if value == "ok" else "not ok" for name, value in checks.items()}
        partial = None
    health = Health(
        status="ready" if ready else "not ready", checks=checks, warnings=[f"index: {partial}"] if partial else None
    )
    return JSONResponse(health.model_dump(exclude_none=True), status_code=200 if ready else 503)


# HEAD, which load balancers and uptime monitors may probe with: the GET's status and headers, no body.
router.add_api_route("/healthz", healthz, methods=["HEAD"], include_in_schema=False)
router.add_api_route("/readyz", readyz, methods=["HEAD"], include_in_schema=False)


def _model_problem(backend: Backend) -> str | None:
    """Why the query model is not loaded: it never was, or its child process died and the replacement
    cannot load it (``ProcessEmbedder.load_problem``)."""
    if backend.embedder is None:
        return backend.model_problem or "not loaded"
    problem = getattr(backend.embedder, "load_problem", None)
    return problem if isinstance(problem, str) else None


@router.get(
    "/metrics",
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"},
        401: COMMON[401],
        403: COMMON[403],
    },
    dependencies=[Depends(require_read)],
    summary="Prometheus metrics",
)
async def metrics(request: Request) -> Response:
    return Response(metrics_of(request).render(), media_type=CONTENT_TYPE_LATEST)


@router.post(
    "/v1/admin/keys/reload",
    response_model=KeysReloaded,
    responses={**COMMON, 409: error_doc("the keys file cannot be used; the previous keys stay")},
    dependencies=[Depends(require_admin)],
    summary="Read the API keys file again",
)
async def reload_keys(request: Request) -> KeysReloaded:
    """What SIGHUP does, for an operator with an ``admin`` key; the file's changes are also picked up on their own
    within ``service.keys_check_interval_s``."""
    keys: KeyRing = request.app.state.keys
    try:
        return KeysReloaded(keys=keys.reload())
    except ConfigError as exc:
        raise ServiceError(409, "keys_not_reloaded", f"{exc}; the previous keys stay in use") from None
