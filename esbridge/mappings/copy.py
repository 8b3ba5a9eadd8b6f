"""Copying every chunk from one index to another through the client, for servers without ``_reindex``.

Some builds and services have no server-side reindex (Elasticsearch's integration-test build lacks
the ``reindex`` module; some managed services disable it). The copy pages through the source with
``search_after`` on ``chunk_id`` and writes each page with one bulk request; only the schema's fields
are read, vectors included (Elasticsearch 9 leaves vectors out of ``_source`` unless a request names them),
so fields the schema no longer has stay behind (server-side ``_reindex`` would refuse them instead, so
reindex copies an index with such fields, added to its mapping by hand, this way).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from esbridge import errors
from esbridge.engines.base import BulkAction, BulkItemFailure, Engine
from esbridge.engines.bulk import BulkWriter, RetryPolicy
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

    The writes go through ``BulkWriter``: requests of at most ``page_size`` documents and 5 MB, with
    backoff on overload (429, 502-504, unreachable), per document and per request. Any write that still
    fails makes the copy fail with an error naming it, and so does a copy that found fewer documents
    than the source holds, so a caller never swaps to an incomplete index.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    expected = engine.count(source)
    writer = BulkWriter(engine, dest, max_actions=page_size, retry=RetryPolicy(attempts=RETRIES + 1), sleep=sleep)
    hits = engine.scan(source, {"match_all": {}}, COPIED_FIELDS, sort_field="chunk_id", page_size=page_size)
    totals = writer.write(BulkAction("index", hit.id, dict(hit.source)) for hit in hits)
    if totals.failed:
        raise _copy_error(engine, dest, totals.failed)
    copied = len(totals.succeeded)
    if copied < expected:
        raise errors.EngineResponseError(
            f"copied {copied} of the {expected} documents in {source}: paging needs a unique chunk_id in every "
            "document (or the source changed during the copy)",
            url=engine.url,
            operation="reindex",
            index=dest,
        )
    return copied


def _copy_error(engine: Engine, dest: str, failures: Sequence[BulkItemFailure]) -> errors.EngineResponseError:
    first = failures[0]
    return errors.EngineResponseError(
        f"copying documents failed for {len(failures)} of them (first: {first.id!r}, HTTP {first.status}: "
        f"{first.reason})",
        url=engine.url,
        operation="reindex",
        index=dest,
    )
