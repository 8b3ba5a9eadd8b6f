"""Reading the response shapes OpenSearch and Elasticsearch share (search, msearch, bulk)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult, Hit, IndexInfo, SearchResult, ShardStatus
from esbridge.engines.errors import error_type_and_reason, from_response
from esbridge.errors import EngineError, EngineResponseError, IndexUnavailable


def root_info(answer: Any, *, url: str, operation: str) -> dict[str, Any]:
    """The answer to ``GET /``, which from every OpenSearch and Elasticsearch is an object naming its version."""
    version = answer.get("version") if isinstance(answer, Mapping) else None
    if isinstance(version, Mapping) and isinstance(version.get("number"), str):
        return dict(answer)
    shown = repr(answer)[:200] if answer not in ("", None) else "an empty body"
    raise EngineResponseError(
        f"GET / answered {shown}, not the object with version.number that OpenSearch and Elasticsearch answer: "
        "the URL leads to another server, or a proxy answers in its place",
        url=url,
        operation=operation,
    )


def search_result(body: Mapping[str, Any], *, url: str, index: str) -> SearchResult:
    try:
        hits_section = body["hits"]
        hits = [
            Hit(id=str(hit["_id"]), score=float(hit.get("_score") or 0.0), source=hit.get("_source") or {})
            for hit in hits_section["hits"]
        ]
        total = hits_section.get("total", len(hits))
        total_count = int(total["value"] if isinstance(total, Mapping) else total)
    except (KeyError, TypeError, ValueError) as exc:
        raise EngineResponseError(
            f"unexpected search response ({exc!r})", url=url, operation="search", index=index
        ) from exc
    return SearchResult(
        hits=hits,
        total=total_count,
        took_ms=int(body.get("took", 0)),
        raw=body,
        shards=shard_status(body.get("_shards")),
        timed_out=bool(body.get("timed_out")),
    )


def counted(body: Mapping[str, Any], *, url: str, index: str) -> int:
    """The ``count`` of a ``_count`` answer; ``IndexUnavailable`` when some shard did not answer."""
    shards = shard_status(body.get("_shards"))
    if shards is not None and shards.problem:
        raise IndexUnavailable(
            f"{shards.problem}: a count of the others would miss their documents, so none is given "
            f"(GET _cluster/health/{index}?level=shards says which shards have no active copy)",
            url=url,
            operation="count",
            index=index,
        )
    return int(body["count"])


def shard_status(section: Any) -> ShardStatus | None:
    """The ``_shards`` section of a search answer, or None when the answer has none (the embedded engine)."""
    if not isinstance(section, Mapping):
        return None
    reasons: list[str] = []
    for failure in section.get("failures") or []:
        if not isinstance(failure, Mapping):
            continue
        kind, reason = error_type_and_reason({"error": failure.get("reason")})
        text = f"{kind}: {reason}" if kind and reason not in (kind, "None") else kind or reason
        if text not in reasons:
            reasons.append(text)
    try:
        return ShardStatus(
            total=int(section.get("total", 0)),
            successful=int(section.get("successful", 0)),
            skipped=int(section.get("skipped", 0)),
            failed=int(section.get("failed", 0)),
            reasons=tuple(reasons),
        )
    except (TypeError, ValueError):
        return None


def msearch_lines(
    index: str,
    bodies: Sequence[Mapping[str, Any]],
    header: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None,
) -> list[Mapping[str, Any]]:
    """The header/body line pairs of an ``_msearch`` request, every search on ``index``; ``header`` adds
    per-search parameters (``search_type``, ``preference``) to its header line."""
    lines: list[Mapping[str, Any]] = []
    for body in bodies:
        lines.extend(({"index": index, **(header(body) if header else {})}, body))
    return lines


def msearch_results(
    body: Mapping[str, Any],
    expected: int,
    *,
    url: str,
    index: str,
    error_for: Callable[[int | None, Any], EngineError] | None = None,
) -> list[SearchResult | Exception]:
    """One result per search, in order; a failed search becomes its esbridge error."""
    if error_for is None:
        error_for = partial(from_response, url=url, operation="search", index=index)
    responses = body.get("responses")
    if not isinstance(responses, list) or len(responses) != expected:
        raise EngineResponseError(
            f"msearch returned {len(responses) if isinstance(responses, list) else 'no'} responses "
            f"for {expected} searches",
            url=url,
            operation="msearch",
            index=index,
        )
    results: list[SearchResult | Exception] = []
    for response in responses:
        if "error" in response:
            results.append(error_for(response.get("status"), response))
        else:
            results.append(search_result(response, url=url, index=index))
    return results


def bulk_lines(index: str, actions: Sequence[BulkAction]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for action in actions:
        lines.append({action.op: {"_index": index, "_id": action.id}})
        if action.op == "delete":
            continue
        if action.document is None:
            raise ValueError(f"{action.op} action for {action.id!r} has no document")
        lines.append(dict(action.document) if action.op == "index" else {"doc": dict(action.document)})
    return lines


TOO_DEEP = (
    "mapper_parsing_exception: the document is nested too deeply to be written as JSON (a cluster refuses one "
    "nested more than 1,000 levels deep)"
)


def sent_in_bulk(
    index: str, actions: Sequence[BulkAction], send: Callable[[list[dict[str, Any]]], Mapping[str, Any]]
) -> BulkResult:
    """``actions`` sent as one bulk request through ``send`` (which returns the engine's answer), sorted into
    succeeded and failed. A document nested too deeply for Python's JSON writer, which the client cannot send (and a
    cluster would refuse), is refused alone, as the cluster refuses it, and the others are sent."""
    try:
        return bulk_result(send(bulk_lines(index, actions)), actions)
    except RecursionError:
        pass
    refused: list[BulkItemFailure] = []
    kept: list[BulkAction] = []
    for action in actions:
        try:
            json.dumps(action.document, default=str)
        except RecursionError:
            refused.append(BulkItemFailure(action.id, 400, TOO_DEEP))
            continue
        kept.append(action)
    result = bulk_result(send(bulk_lines(index, kept)), kept) if kept else BulkResult(succeeded=[], failed=[])
    return BulkResult(succeeded=list(result.succeeded), failed=[*refused, *result.failed])


def bulk_result(body: Mapping[str, Any], actions: Sequence[BulkAction]) -> BulkResult:
    """Sort a bulk response into succeeded ids and per-document failures.

    Deleting a document that is already gone (404) counts as success: the end state is the one asked for.
    """
    items = body.get("items", [])
    succeeded: list[str] = []
    failed: list[BulkItemFailure] = []
    for action, item in zip(actions, items, strict=False):
        outcome: Mapping[str, Any] = item.get(action.op) or next(iter(item.values()), {})
        status = int(outcome.get("status", 0))
        if 200 <= status < 300 or (action.op == "delete" and status == 404):
            succeeded.append(action.id)
        else:
            kind, reason = error_type_and_reason({"error": outcome.get("error")})
            failed.append(BulkItemFailure(id=action.id, status=status, reason=f"{kind}: {reason}" if kind else reason))
    for action in actions[len(items) :]:
        failed.append(BulkItemFailure(id=action.id, status=0, reason="no result for this item in the bulk response"))
    return BulkResult(succeeded=succeeded, failed=failed)


def index_infos(rows: Sequence[Mapping[str, Any]]) -> list[IndexInfo]:
    """``_cat/indices?format=json&bytes=b`` rows as IndexInfo, sorted by name."""
    infos = [
        IndexInfo(
            name=str(row["index"]),
            docs=int(row.get("docs.count") or 0),
            size_bytes=int(row.get("store.size") or 0),
            health=row.get("health"),
            closed=row.get("status") == "close",
        )
        for row in rows
    ]
    return sorted(infos, key=lambda info: info.name)


def single_index_section(answer: Mapping[str, Any], section: str, *, url: str, index: str) -> dict[str, Any]:
    """The ``section`` of the one concrete index in a per-index answer (``{name: {section: ...}}``)."""
    if len(answer) != 1:
        raise EngineResponseError(
            f"expected one index behind {index!r}, found {len(answer)}: {sorted(answer)}; esbridge reads the "
            "mapping of one index, whose fields may differ from the others': name one of them (--index)",
            url=url,
            operation=f"read {section}",
            index=index,
        )
    content = next(iter(answer.values()))
    return dict(content.get(section) or {})


def reindexed_count(result: Mapping[str, Any], *, url: str, index: str) -> int:
    failures = result.get("failures") or []
    if failures:
        first = failures[0]
        kind, reason = error_type_and_reason({"error": first.get("cause", first)})
        raise EngineResponseError(
            f"{len(failures)} document(s) failed to copy, first: {kind}: {reason}",
            url=url,
            operation="reindex",
            index=index,
        )
    return int(result.get("created", 0)) + int(result.get("updated", 0))
