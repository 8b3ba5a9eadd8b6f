from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from esbridge import errors
from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult, Engine
from esbridge.engines.bulk import BulkWriter, RetryPolicy, batches_by_bytes


class FlakyStore:
    """Stores documents like an engine would, but is overloaded for its first ``busy`` requests."""

    def __init__(self, busy: int = 0, busy_items: int = 0, refuse: set[str] | None = None) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self.busy = busy
        self.busy_items = busy_items
        self.refuse = refuse or set()
        self.requests = 0

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        self.requests += 1
        if self.requests <= self.busy:
            raise errors.Throttled("queue full", url="u", operation="bulk write", index=index, status=429)
        succeeded, failed = [], []
        for n, action in enumerate(actions):
            if action.id in self.refuse:
                failed.append(BulkItemFailure(action.id, 400, "mapper_parsing_exception: bad"))
            elif self.busy_items and n % 2 == 0:
                failed.append(BulkItemFailure(action.id, 429, "es_rejected_execution_exception: busy"))
            elif action.op == "delete":
                self.documents.pop(action.id, None)
                succeeded.append(action.id)
            else:
                self.documents[action.id] = dict(action.document or {})
                succeeded.append(action.id)
        if self.busy_items:
            self.busy_items -= 1
        return BulkResult(succeeded, failed)


def writer(store: FlakyStore, **kwargs: Any) -> BulkWriter:
    return BulkWriter(cast(Engine, store), "idx", sleep=lambda _: None, **kwargs)


def actions(count: int) -> list[BulkAction]:
    return [BulkAction("index", f"d{n}", {"n": n, "text": "x" * 50}) for n in range(count)]


def test_batches_respect_bytes_and_count() -> None:
    batches = list(batches_by_bytes(actions(10), max_bytes=400, max_actions=3))
    assert [len(batch) for batch in batches] == [2, 2, 2, 2, 2]
    assert [a.id for batch in batches for a in batch] == [f"d{n}" for n in range(10)]
    assert [len(b) for b in batches_by_bytes(actions(7), max_bytes=10**6, max_actions=3)] == [3, 3, 1]
    big = [BulkAction("index", "huge", {"text": "y" * 5000})]
    assert [len(b) for b in batches_by_bytes(big, max_bytes=100, max_actions=3)] == [1]


def test_an_overloaded_engine_loses_nothing() -> None:
    store = FlakyStore(busy=3)
    totals = writer(store, max_actions=4).write(actions(10))
    assert sorted(store.documents) == sorted(f"d{n}" for n in range(10))
    assert totals.failed == []
    assert sorted(totals.succeeded) == sorted(store.documents)
    assert totals.retries == 3


def test_items_rejected_as_busy_are_retried_alone() -> None:
    store = FlakyStore(busy_items=2)
    totals = writer(store).write(actions(6))
    assert sorted(store.documents) == [f"d{n}" for n in range(6)]
    assert totals.failed == []


def test_a_bad_document_is_reported_and_the_rest_written() -> None:
    store = FlakyStore(refuse={"d3"})
    totals = writer(store).write(actions(6))
    assert sorted(store.documents) == ["d0", "d1", "d2", "d4", "d5"]
    assert [(f.id, f.status, f.reason) for f in totals.failed] == [("d3", 400, "mapper_parsing_exception: bad")]


def test_giving_up_names_the_attempts() -> None:
    store = FlakyStore(busy=100)
    totals = writer(store, retry=RetryPolicy(attempts=3)).write(actions(2))
    assert store.documents == {}
    assert [f.id for f in totals.failed] == ["d0", "d1"]
    assert all("gave up after 3 attempts" in f.reason for f in totals.failed)
    assert store.requests == 3


def test_a_refused_request_fails_its_documents_without_retrying() -> None:
    class Refusing(FlakyStore):
        def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
            self.requests += 1
            raise errors.RequestRejected("too large", url="u", operation="bulk write", index=index, status=413)

    store = Refusing()
    totals = writer(store).write(actions(3))
    assert store.requests == 1
    assert [f.reason for f in totals.failed] == ["bulk request refused: too large"] * 3


def test_backoff_delays_grow_and_stay_bounded() -> None:
    delays = list(RetryPolicy(attempts=8, initial_delay_s=1, max_delay_s=5).delays())
    assert len(delays) == 7
    assert all(0 <= delay <= 5 for delay in delays)


def test_a_gateway_or_unavailable_answer_to_the_whole_request_is_retried() -> None:
    class Unavailable(FlakyStore):
        def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
            if self.requests < 2:
                self.requests += 1
                status = 503 if self.requests == 1 else 502
                raise errors.EngineResponseError(
                    "no shard", url="u", operation="bulk write", index=index, status=status
                )
            return super().bulk(index, actions)

    store = Unavailable()
    totals = writer(store).write(actions(3))
    assert sorted(store.documents) == ["d0", "d1", "d2"]
    assert (totals.failed, totals.retries) == ([], 2)


def test_an_id_longer_than_the_engines_allow_fails_alone_before_sending() -> None:
    long_id = "é" * 300  # 600 bytes in UTF-8: OpenSearch and Elasticsearch refuse the whole bulk request for it
    store = FlakyStore()
    totals = writer(store).write([*actions(2), BulkAction("index", long_id, {"n": 9}), *actions(4)[2:]])
    assert sorted(store.documents) == ["d0", "d1", "d2", "d3"]
    assert [(f.id, f.status) for f in totals.failed] == [(long_id, 400)]
    assert "600 bytes" in totals.failed[0].reason and "512" in totals.failed[0].reason


def test_giving_up_on_an_unreachable_engine_is_told_apart_from_an_overloaded_one() -> None:
    class Gone(FlakyStore):
        def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
            self.requests += 1
            raise errors.EngineUnavailable("connection refused", url="u", operation="bulk write", index=index)

    gone = writer(Gone(), retry=RetryPolicy(attempts=2)).write(actions(2))
    assert gone.unreachable is not None and gone.unreachable.reason == "connection refused"
    busy = writer(FlakyStore(busy=100), retry=RetryPolicy(attempts=2)).write(actions(2))
    assert len(busy.failed) == 2 and busy.unreachable is None
