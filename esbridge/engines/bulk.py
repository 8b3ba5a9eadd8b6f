"""Bulk writes that lose nothing: byte-sized batches, backoff on overload, every failure accounted for.

A whole request that meets an overloaded or unreachable engine (429, 502-504, timeouts, refused
connections) is retried with exponential backoff; so are single items the engine rejected as
overloaded. What still fails is returned per document with its reason; it never stops the load. An
item refused by the index's write block (``esbridge index reindex`` is copying it) is not retried:
its reason is rewritten to say so and what to do. An action whose id is longer than the engines allow
is failed here, before sending: the engines refuse the whole request for it, with every other action in it.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from esbridge import errors
from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult, Engine
from esbridge.engines.blocks import explain_write_block

MAX_ID_BYTES = 512
"""The longest ``_id`` OpenSearch and Elasticsearch accept, in UTF-8 bytes."""


def _retryable_request(exc: errors.EngineError) -> bool:
    """Overload or unreachability: 429, 502-504 answers (which arrive as EngineResponseError), timeouts."""
    return isinstance(exc, (errors.Throttled, errors.EngineUnavailable)) or exc.status in (502, 503, 504)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delays(self) -> Iterator[float]:
        """Full-jitter exponential backoff (AWS architecture blog, "Exponential Backoff And Jitter")."""
        for attempt in range(self.attempts - 1):
            yield random.uniform(0, min(self.max_delay_s, self.initial_delay_s * 2**attempt))  # noqa: S311


@dataclass
class BulkTotals:
    succeeded: list[str] = field(default_factory=list)
    failed: list[BulkItemFailure] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    unreachable: errors.EngineUnavailable | None = None
    """Set when a request was given up because the engine could not be reached: what the last attempt raised."""

    def stop_if_unreachable(self, *, operation: str, index: str, planned: int | None = None, rerun: str = "") -> None:
        """Raise once the engine could not be reached: every later request would wait out its retries too. The
        error counts what was written (of ``planned``) and says it is kept; ``rerun`` says what running again does."""
        gone = self.unreachable
        if gone is None:
            return
        written = len(self.succeeded)
        of = f" of {planned}" if planned is not None else ""
        raise errors.EngineUnavailable(
            f"writes stopped after {written}{of} chunk writes: {gone.reason}. The {written} written are kept; run "
            f"the command again once the engine takes writes{rerun}",
            url=gone.url,
            operation=operation,
            index=index,
        ) from gone


def batches_by_bytes(actions: Iterable[BulkAction], max_bytes: int, max_actions: int) -> Iterator[list[BulkAction]]:
    """Group actions so each request body stays under ``max_bytes`` (a larger single action goes alone)."""
    batch: list[BulkAction] = []
    size = 0
    for action in actions:
        action_size = len(json.dumps(action.document, default=str)) + 100 if action.document is not None else 100
        if batch and (size + action_size > max_bytes or len(batch) >= max_actions):
            yield batch
            batch, size = [], 0
        batch.append(action)
        size += action_size
    if batch:
        yield batch


class BulkWriter:
    """Writes actions to one index in retried, byte-sized bulk requests and keeps the tally."""

    def __init__(
        self,
        engine: Engine,
        index: str,
        *,
        max_bytes: int = 5 * 1024 * 1024,
        max_actions: int = 1000,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.engine = engine
        self.index = index
        self.max_bytes = max_bytes
        self.max_actions = max_actions
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.totals = BulkTotals()

    def write(self, actions: Iterable[BulkAction], on_batch: Callable[[int], None] | None = None) -> BulkTotals:
        for batch in batches_by_bytes(self._refuse_long_ids(actions), self.max_bytes, self.max_actions):
            result = self._write_batch(batch)
            self.totals.succeeded.extend(result.succeeded)
            self.totals.failed.extend(explain_write_block(failure, self.index) for failure in result.failed)
            if on_batch is not None:
                on_batch(len(batch))
        return self.totals

    def _refuse_long_ids(self, actions: Iterable[BulkAction]) -> Iterator[BulkAction]:
        for action in actions:
            size = len(action.id.encode("utf-8"))
            if size <= MAX_ID_BYTES:
                yield action
                continue
            reason = f"id is {size} bytes long; engines accept at most {MAX_ID_BYTES} (shorten the record's id)"
            self.totals.failed.append(BulkItemFailure(action.id, 400, reason))

    def _write_batch(self, batch: Sequence[BulkAction]) -> BulkResult:
        pending = list(batch)
        succeeded: list[str] = []
        failed: list[BulkItemFailure] = []
        delays = self.retry.delays()
        while True:
            unreachable: errors.EngineUnavailable | None = None
            try:
                self.totals.requests += 1
                result = self.engine.bulk(self.index, pending)
            except errors.EngineError as exc:
                unreachable = exc if isinstance(exc, errors.EngineUnavailable) else None
                if not _retryable_request(exc):
                    # The request as a whole was refused (too large, malformed): retrying cannot help.
                    reason = f"bulk request refused: {exc.reason}"
                    failed.extend(BulkItemFailure(a.id, exc.status or 0, reason) for a in pending)
                    return BulkResult(succeeded, failed)
                status = exc.status or 503
                result = BulkResult(succeeded=[], failed=[BulkItemFailure(a.id, status, exc.reason) for a in pending])
            succeeded.extend(result.succeeded)
            failed.extend(failure for failure in result.failed if not failure.retryable)
            again = [failure for failure in result.failed if failure.retryable]
            if not again:
                return BulkResult(succeeded, failed)
            delay = next(delays, None)
            if delay is None:
                self.totals.unreachable = unreachable or self.totals.unreachable
                attempts = self.retry.attempts
                failed.extend(
                    BulkItemFailure(f.id, f.status, f"{f.reason} (gave up after {attempts} attempts)") for f in again
                )
                return BulkResult(succeeded, failed)
            self.totals.retries += 1
            self.sleep(delay)
            retry_ids = {failure.id for failure in again}
            pending = [action for action in pending if action.id in retry_ids]
