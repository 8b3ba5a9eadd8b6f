"""The HTTP routes: search, document upsert and delete, health, readiness, metrics and key reload."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Security
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST

from esbridge.config.settings import Settings
from esbridge.engines.base import Engine
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
from esbridge.ids import shown_escaped
from esbridge.query.deadline import within
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.service import document_path, documents
from esbridge.service.auth import KeyRing
from esbridge.service.backend import Backend
from esbridge.service.errors import GuardedRoute, ServiceError
from esbridge.service.limits import answer_time_s
from esbridge.service.metrics import Metrics
from esbridge.service.models import (
    DeleteResponse,
    DocumentsRequest,
    DocumentsResponse,
    ErrorResponse,
    Health,
    KeysReloaded,
)
from esbridge.service.writes import Cancellation, WriteControl, run_cancellable

T = TypeVar("T")

_bearer = HTTPBearer(auto_error=False, description="an API key: Authorization: Bearer <key>")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


_COMMON: dict[int | str, dict[str, Any]] = {
    401: _error("no API key, or one that is not accepted"),
    403: _error("the API key lacks the scope this route needs (forbidden)"),
    408: _error("the body did not all arrive within service.request_timeout_s (body_timeout)"),
    413: _error("the body is larger than service.max_body_bytes"),
    422: _error("the request is invalid; error.fields says where"),
    429: _error("over the key's rate limit, or the service is at capacity; retry after Retry-After seconds"),
    500: _error("an unexpected error (details in the service log only)"),
    502: _error("the engine refused esbridge's credentials or answered with an error"),
    503: _error("the engine or the index is not available; retry after Retry-After seconds"),
    504: _error("no answer within service.request_timeout_s"),
}
_WRITES: dict[int | str, dict[str, Any]] = {
    **_COMMON,
    403: _error("the key lacks the write scope, or writes are disabled: no API keys are configured"),
    409: _error(
        "the index is attached (not created by esbridge): the sidecar does not write to it (read_only_index); or the "
        "alias points to several indices, of which a write would reach one (alias_ambiguous); or the index's vectors "
        "were made by another model (model_mismatch)"
    ),
}
_NOT_JSON: dict[int | str, dict[str, Any]] = {
    400: _error("the body is not valid JSON (invalid_json)"),
    415: _error("the body is not sent as Content-Type: application/json (unsupported_media_type)"),
}


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _backend(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def _check(request: Request, bearer: HTTPAuthorizationCredentials | None, header: str | None, scope: str) -> None:
    keys: KeyRing = request.app.state.keys
    given = bearer.credentials if bearer is not None else header
    grant = keys.grant(given)
    if grant is None:
        message = "an API key is required" if given is None else "the API key is not accepted"
        if given is None and request.headers.get("authorization"):  # Basic, a bare key, ...: not shown, it may be one
            message += "; the Authorization header is read only as 'Bearer <key>' (or send X-API-Key: <key>)"
        raise ServiceError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
    if not grant.allows(scope):
        held = ", ".join(sorted(grant.scopes))
        raise ServiceError(403, "forbidden", f"the API key has scope(s) {held}; this route needs {scope}")


def _may_read(request: Request, bearer: HTTPAuthorizationCredentials | None, header: str | None) -> bool:
    """Whether the caller may search: reads are open, or it presents a key with the read scope."""
    if not _settings(request).service.reads_need_key:
        return True
    keys: KeyRing = request.app.state.keys
    grant = keys.grant(bearer.credentials if bearer is not None else header)
    return grant is not None and grant.allows("read")


async def require_read(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header: Annotated[str | None, Security(_header)],
) -> None:
    if _settings(request).service.reads_need_key:
        _check(request, bearer, header, "read")


async def require_write(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header: Annotated[str | None, Security(_header)],
) -> None:
    keys: KeyRing = request.app.state.keys
    if not keys.configured:
        raise ServiceError(
            403,
            "writes_disabled",
            "writes are disabled until API keys are configured (ESBRIDGE_API_KEYS or service.api_keys_file)",
        )
    _check(request, bearer, header, "write")


async def require_admin(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header: Annotated[str | None, Security(_header)],
) -> None:
    _check(request, bearer, header, "admin")


router = APIRouter(route_class=GuardedRoute)


@router.post(
    "/v1/search",
    response_model=SearchResponse,
    responses={
        **_NOT_JSON,
        **_COMMON,
        409: _error("the index's vectors were made by another model than the service's (model_mismatch)"),
    },
    dependencies=[Depends(require_read)],
    summary="Hybrid search",
)
async def search(request: Request, body: SearchRequest) -> SearchResponse:
    """BM25 and kNN in parallel, fused; the same request and response as the CLI and the Python API."""
    settings = _settings(request)
    service = settings.service
    if len(body.query) > service.max_query_chars:
        raise _invalid(
            "body.query", f"must have at most {service.max_query_chars} characters (service.max_query_chars)"
        )
    top_n_max = min(service.max_top_n, settings.pipeline.top_n_max)
    if body.top_n > top_n_max:
        if "top_n" in body.model_fields_set:
            bound = "service.max_top_n" if service.max_top_n <= settings.pipeline.top_n_max else "pipeline.top_n_max"
            raise _invalid("body.top_n", f"must be at most {top_n_max} ({bound})")
        body = body.model_copy(update={"top_n": top_n_max})  # the default (10) over a lower configured bound
    backend = _backend(request)
    if service.log_queries:
        request.state.query = body.query

    writes_ended = backend.writes_ended
    began = time.monotonic()
    async with within(service.request_timeout_s):
        connected = await backend.connected()
        backend.check_data_dir(connected, "search")
        left = service.request_timeout_s - (time.monotonic() - began)
        response = await connected.searcher.search(body, time_s=left - answer_time_s(service.request_timeout_s))
    if backend.writes_ended != writes_ended:  # a write ended meanwhile: what this search cached may predate it
        backend.clear_response_cache()
    request.state.search_mode = response.search_mode
    _metrics(request).observe_search(response)
    return response


@router.post(
    "/v1/documents",
    response_model=DocumentsResponse,
    responses={**_NOT_JSON, **_WRITES},
    dependencies=[Depends(require_write)],
    summary="Upsert documents",
)
async def upsert_documents(request: Request, body: DocumentsRequest) -> DocumentsResponse:
    """Validate, chunk, embed and write a batch; each record is answered on its own (``results``)."""
    service = _settings(request).service
    documents.refuse_records_over(len(body.documents), body.format, service.max_documents)
    backend = _backend(request)
    _refuse_attached(request)

    def work(engine: Engine, control: WriteControl) -> documents.UpsertOutcome:
        batch = documents.read(body.documents, body.format, limit=service.max_documents)
        documents.refuse_over(batch, service.max_documents)  # counted as written: a record's tools and skills too
        backend.ensure_index(engine)
        return documents.write(engine, backend.index, backend.embedder, batch, source=service.source, control=control)

    outcome = await _write(request, "upsert", work)
    failed = sum(1 for result in outcome.results if result.status == "error")
    return DocumentsResponse(
        index=backend.index,
        written=len(outcome.results) - failed,
        failed=failed,
        results=outcome.results,
        warnings=outcome.warnings,
        visible=outcome.visible,
    )


@router.delete(
    "/v1/documents/{doc_id:document_id}",
    response_model=DeleteResponse,
    responses={**_WRITES, 404: _error("no document with this id")},
    dependencies=[Depends(require_write)],
    summary="Delete a document",
)
async def delete_document(
    request: Request, doc_id: Annotated[str, Path(min_length=1, max_length=512)]
) -> DeleteResponse:
    """Delete every chunk of the document."""
    backend = _backend(request)
    _refuse_attached(request)
    try:
        candidates = document_path.path_ids(request.scope.get("raw_path"), doc_id)
    except ValueError as exc:
        raise ServiceError(422, "validation", f"path.doc_id: {exc}", fields=[("path.doc_id", str(exc))]) from None

    def work(engine: Engine, control: WriteControl) -> documents.Deleted:
        return documents.delete_first(engine, backend.index, candidates, control=control)

    done = await _write(request, "delete", work)
    if done.chunks == 0:
        raise ServiceError(404, "not_found", f"no document '{shown_escaped(done.id)}' in {backend.index}")
    return DeleteResponse(id=done.id, deleted_chunks=done.chunks, owned=done.owned)


def _refuse_attached(request: Request) -> None:
    """An attached index (one esbridge did not create) is searched, never written, through the sidecar."""
    settings = _settings(request)
    if settings.attached:
        raise ServiceError(
            409,
            "read_only_index",
            f"index {settings.index} is attached (it has a [fields.{settings.index}] field map): "
            "the sidecar searches it and never writes to it",
        )


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
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header: Annotated[str | None, Security(_header)],
) -> Response:
    """Ready when the engine answers, the index exists and the embedding model is loaded, answers and may search it.

    Where searches need a key, a caller without one that may read learns only which checks failed: their reasons
    name the engine's URL, the index and the model."""
    backend = _backend(request)
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
    if not _may_read(request, bearer, header):
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
        401: _COMMON[401],
        403: _COMMON[403],
    },
    dependencies=[Depends(require_read)],
    summary="Prometheus metrics",
)
async def metrics(request: Request) -> Response:
    return Response(_metrics(request).render(), media_type=CONTENT_TYPE_LATEST)


@router.post(
    "/v1/admin/keys/reload",
    response_model=KeysReloaded,
    responses={**_COMMON, 409: _error("the keys file cannot be used; the previous keys stay")},
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


async def _write(request: Request, what: str, work: Callable[[Engine, WriteControl], T]) -> T:
    """``work`` in a worker thread under the service's refresh policy and timeout; the index's cached search
    answers are dropped when it ends, whenever that is (see ``esbridge.service.writes``)."""
    service = _settings(request).service
    backend = _backend(request)
    began = time.monotonic()
    async with within(service.request_timeout_s):  # connecting counts against the request's time
        connected = await backend.connected()
    loop = asyncio.get_running_loop()

    def step(cancel: Cancellation) -> T:
        try:
            backend.check_data_dir(connected)
            return work(connected.engine, WriteControl(service.refresh, service.wait_for_max_s, cancel))
        except (EsbridgeError, OSError, ValueError):
            backend.check_data_dir(connected)  # removed while it wrote: say so, not what failed on the way
            raise
        finally:
            loop.call_soon_threadsafe(backend.invalidate_responses)

    return await run_cancellable(
        step,
        timeout_s=service.request_timeout_s,
        elapsed_s=time.monotonic() - began,
        running=backend.writes,
        grace_s=service.write_cancel_grace_s,
        metrics=_metrics(request),
        what=what,
    )


def _invalid(field: str, message: str) -> ServiceError:
    return ServiceError(422, "validation", f"{field}: {message}", fields=[(field, message)])
