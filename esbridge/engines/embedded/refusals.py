"""What the embedded engine refuses item by item in a bulk request, as a cluster refuses it: an ``_id``, or a
document that does not fit the mapping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult
from esbridge.engines.bulk import MAX_ID_BYTES
from esbridge.engines.embedded.mapping import DocumentError, Schema
from esbridge.engines.embedded.scalars import unpaired_surrogate


def all_refused(actions: Sequence[BulkAction], status: int, reason: str) -> BulkResult:
    """Every item of a bulk request refused for one reason (no write index, a write block)."""
    return BulkResult(succeeded=[], failed=[BulkItemFailure(a.id, status, reason) for a in actions])


def refused_id(doc_id: str) -> BulkItemFailure | None:
    """The failure a cluster reports for an ``_id`` it refuses (one over 512 bytes fails its whole request there)."""
    if not doc_id:
        return BulkItemFailure(doc_id, 400, "illegal_argument_exception: if _id is specified it must not be empty")
    if (problem := unpaired_surrogate(doc_id)) is not None:
        return BulkItemFailure(doc_id, 400, f"illegal_argument_exception: _id: {problem}")
    size = len(doc_id.encode())
    if size > MAX_ID_BYTES:
        reason = f"id is too long, must be no longer than {MAX_ID_BYTES} bytes but was: {size}"
        return BulkItemFailure(doc_id, 400, f"action_request_validation_exception: {reason}")
    return None


def refused_document(schema: Schema, doc_id: str, document: Mapping[str, Any]) -> BulkItemFailure | None:
    """The failure a cluster reports for a document that does not fit the mapping."""
    try:
        schema.check(document)
    except DocumentError as exc:
        return BulkItemFailure(doc_id, 400, f"{exc.kind}: {exc}")
    return None
