"""The API's routes: search, and document upsert and delete (the operators' routes: ``ops_routes``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path, Request

from esbridge.engines.base import Engine
from esbridge.errors import EsbridgeError
from esbridge.ids import shown_escaped
from esbridge.query.deadline import within
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.service import document_path, documents
from esbridge.service.errors import GuardedRoute, ServiceError
from esbridge.service.limits import answer_time_s
from esbridge.service.models import DeleteResponse, DocumentsRequest, DocumentsResponse
from esbridge.service.route_access import (
    COMMON,
    NOT_JSON,
    WRITES,
    backend_of,
    error_doc,
    metrics_of,
    require_read,
    require_write,
    settings_of,
)
from esbridge.service.writes import Cancellation, WriteControl, run_cancellable

T = TypeVar("T")

router = APIRouter(route_class=GuardedRoute)


@router.post(
    "/v1/search",
    response_model=SearchResponse,
    responses={
        **NOT_JSON,
        **COMMON,
        409: error_doc("the index's vectors were made by another model than the service's (model_mismatch)"),
    },
    dependencies=[Depends(require_read)],
    summary="Hybrid search",
)
async def search(request: Request, body: SearchRequest) -> SearchResponse:
    """BM25 and kNN in parallel, fused; the same request and response as the CLI and the Python API."""
    settings = settings_of(request)
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
    backend = backend_of(request)
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
    metrics_of(request).observe_search(response)
    return response


@router.post(
    "/v1/documents",
    response_model=DocumentsResponse,
    responses={**NOT_JSON, **WRITES},
    dependencies=[Depends(require_write)],
    summary="Upsert documents",
)
async def upsert_documents(request: Request, body: DocumentsRequest) -> DocumentsResponse:
    """Validate, chunk, embed and write a batch; each record is answered on its own (``results``)."""
    service = settings_of(request).service
    documents.refuse_records_over(len(body.documents), body.format, service.max_documents)
    backend = backend_of(request)
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
    responses={**WRITES, 404: error_doc("no document with this id")},
    dependencies=[Depends(require_write)],
    summary="Delete a document",
)
async def delete_document(
    request: Request, doc_id: Annotated[str, Path(min_length=1, max_length=512)]
) -> DeleteResponse:
    """Delete every chunk of the document."""
    backend = backend_of(request)
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
    settings = settings_of(request)
    if settings.attached:
        raise ServiceError(
            409,
            "read_only_index",
            f"index {settings.index} is attached (it has a [fields.{settings.index}] field map): "
            "the sidecar searches it and never writes to it",
        )


async def _write(request: Request, what: str, work: Callable[[Engine, WriteControl], T]) -> T:
    """``work`` in a worker thread under the service's refresh policy and timeout; the index's cached search
    answers are dropped when it ends, whenever that is (see ``esbridge.service.writes``)."""
    service = settings_of(request).service
    backend = backend_of(request)
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
        metrics=metrics_of(request),
        what=what,
    )


def _invalid(field: str, message: str) -> ServiceError:
    return ServiceError(422, "validation", f"{field}: {message}", fields=[(field, message)])
