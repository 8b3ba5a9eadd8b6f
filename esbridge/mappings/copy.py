"""Copying every chunk from one index to another through the client, for servers without ``_reindex``.

Some builds and services have no server-side reindex (Elasticsearch's integration-test build lacks
the ``reindex`` module; some managed services disable it). The copy pages through the source with
``search_after`` on ``chunk_id`` and writes each page with one bulk request; only the schema's fields
are read, vectors included (Elasticsearch 9 leaves vectors out of ``_source`` unless a request names them),
so fields the schema no longer has stay behind (server-side ``_reindex`` would refuse them instead).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from esbridge import errors
from esbridge.engines.base import BulkAction, BulkItemFailure, Engine
from esbridge.mappings.schema import FIELDS

COPIED_FIELDS = tuple(spec.name for spec in FIELDS)
RETRIES = 3


def copy_documents(
    engine: Engine,
    source: str,
    dest: str,
    *,
    page_size: int = 500,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Copy every document of ``source`` into ``dest`` with its id; return how many were written.

    Writes the server throttled (429) or could not take for a moment are retried, per document and per
    request; any other failed write stops the copy with an error naming it, and so does a copy that
    found fewer documents than the source holds, so a caller never swaps to an incomplete index.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    expected = engine.count(source)
    copied = 0
    page: list[BulkAction] = []
    for hit in engine.scan(source, {"match_all": {}}, COPIED_FIELDS, sort_field="chunk_id", page_size=page_size):
        page.append(BulkAction("index", hit.id, dict(hit.source)))
        if len(page) == page_size:
            copied += _write(engine, dest, page, sleep)
            page = []
    if page:
        copied += _write(engine, dest, page, sleep)
    if copied < expected:
        raise errors.EngineResponseError(
            f"copied {copied} of the {expected} documents in {source}: paging needs a unique chunk_id in every "
            "document (or the source changed during the copy)",
            url=engine.url,
            operation="reindex",
            index=dest,
        )
    return copied


def _write(engine: Engine, dest: str, actions: Sequence[BulkAction], sleep: Callable[[float], None]) -> int:
    pending = list(actions)
    written = 0
    attempt = 0
    while True:
        try:
            result = engine.bulk(dest, pending)
        except errors.EngineError as exc:
            if not _transient(exc) or attempt == RETRIES:
                raise
            sleep(0.5 * 2**attempt)
            attempt += 1
            continue
        written += len(result.succeeded)
        if not result.failed:
            return written
        permanent = [failure for failure in result.failed if not failure.retryable]
        if permanent or attempt == RETRIES:
            raise _copy_error(engine, dest, permanent or list(result.failed))
        retry_ids = {failure.id for failure in result.failed}
        pending = [action for action in pending if action.id in retry_ids]
        sleep(0.5 * 2**attempt)
        attempt += 1


def _transient(exc: errors.EngineError) -> bool:
    return isinstance(exc, (errors.Throttled, errors.EngineUnavailable)) or exc.status in (502, 503, 504)


def _copy_error(engine: Engine, dest: str, failures: Sequence[BulkItemFailure]) -> errors.EngineResponseError:
    first = failures[0]
    return errors.EngineResponseError(
        f"copying documents failed for {len(failures)} of them (first: {first.id!r}, HTTP {first.status}: "
        f"{first.reason})",
        url=engine.url,
        operation="reindex",
        index=dest,
    )
