"""The client-side copy used by reindex on servers without ``_reindex``: paging, retries, refusal."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult, Engine
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineError, EngineResponseError, RequestRejected, Throttled
from esbridge.mappings.copy import copy_documents
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters, render_index

PARAMS = IndexParameters(dimension=2)


class FlakyBulk:
    """The embedded engine, except that chosen ids fail with a chosen status a number of times."""

    def __init__(
        self,
        engine: EmbeddedEngine,
        failures: dict[str, tuple[int, int]],
        reindex: bool = True,
        request_errors: Sequence[EngineError] = (),
    ) -> None:
        self._engine = engine
        self._failures = dict(failures)  # id -> (status, how many times)
        self._reindex = reindex
        self._request_errors = list(request_errors)  # raised by the next bulk calls, one each
        self.bulk_sizes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def probe(self) -> Any:
        capabilities = self._engine.probe()
        return capabilities.model_copy(update={"features": {**capabilities.features, "reindex": self._reindex}})

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        self.bulk_sizes.append(len(actions))
        if self._request_errors:
            raise self._request_errors.pop(0)
        failing = {a.id for a in actions if self._failures.get(a.id, (0, 0))[1] > 0}
        result = self._engine.bulk(index, [a for a in actions if a.id not in failing])
        failed = []
        for chunk_id in sorted(failing):
            status, times = self._failures[chunk_id]
            self._failures[chunk_id] = (status, times - 1)
            failed.append(BulkItemFailure(chunk_id, status, f"injected {status}"))
        return BulkResult(succeeded=result.succeeded, failed=[*result.failed, *failed])


def chunk(n: int) -> BulkAction:
    chunk_id = f"d{n:02d}#0"
    return BulkAction(
        "index", chunk_id, {"chunk_id": chunk_id, "doc_id": f"d{n:02d}", "title": f"t{n}", "vector": [1.0, n]}
    )


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("src", render_index("opensearch", PARAMS))
    engine.create_index("dst", render_index("opensearch", PARAMS))
    engine.bulk("src", [chunk(n) for n in range(7)])
    engine.refresh("src")
    yield engine
    engine.close()


def stored(engine: Engine, index: str) -> dict[str, dict[str, Any]]:
    engine.refresh(index)
    hits = engine.scan(index, {"match_all": {}}, ["chunk_id", "title", "vector"], sort_field="chunk_id")
    return {hit.id: dict(hit.source) for hit in hits}


def test_pages_of_the_given_size_copy_everything(engine: EmbeddedEngine) -> None:
    flaky = FlakyBulk(engine, {})
    assert copy_documents(flaky, "src", "dst", page_size=3) == 7
    assert flaky.bulk_sizes == [3, 3, 1]
    assert stored(engine, "dst") == stored(engine, "src")
    assert stored(engine, "dst")["d06#0"]["vector"] == pytest.approx([1.0, 6.0])


def test_throttled_writes_are_retried_until_they_land(engine: EmbeddedEngine) -> None:
    waits: list[float] = []
    flaky = FlakyBulk(engine, {"d01#0": (429, 2), "d05#0": (503, 1)})
    assert copy_documents(flaky, "src", "dst", page_size=4, sleep=waits.append) == 7
    assert flaky.bulk_sizes == [4, 1, 1, 3, 1]  # each retry resends only what failed
    assert len(waits) == 3 and all(0 <= wait <= 1.0 for wait in waits)  # BulkWriter's jittered backoff
    assert len(stored(engine, "dst")) == 7


def test_a_rejected_document_stops_the_copy_and_is_named(engine: EmbeddedEngine) -> None:
    flaky = FlakyBulk(engine, {"d02#0": (400, 1)})
    with pytest.raises(EngineResponseError, match=r"1 of them \(first: 'd02#0', HTTP 400: injected 400\)"):
        copy_documents(flaky, "src", "dst", page_size=10, sleep=lambda _: None)


def test_throttling_that_never_ends_gives_up(engine: EmbeddedEngine) -> None:
    flaky = FlakyBulk(engine, {"d03#0": (429, 99)})
    with pytest.raises(EngineResponseError, match="HTTP 429"):
        copy_documents(flaky, "src", "dst", sleep=lambda _: None)
    assert flaky.bulk_sizes == [7, 1, 1, 1]


def test_page_size_is_validated(engine: EmbeddedEngine) -> None:
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        copy_documents(engine, "src", "dst", page_size=0)


def test_reindex_without_server_reindex_copies_and_keeps_the_alias_on_failure(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        manager = IndexManager(engine, "notes", PARAMS)
        manager.create()
        engine.bulk("notes", [chunk(n) for n in range(5)])
        engine.refresh("notes")

        broken = FlakyBulk(engine, {"d04#0": (400, 1)}, reindex=False)
        with pytest.raises(EngineResponseError, match="d04#0"):
            IndexManager(broken, "notes", PARAMS).reindex()
        assert engine.alias_targets("notes") == ["notes-v1"]
        assert not engine.index_exists("notes-v2"), "the half-built version is deleted"

        outcome = IndexManager(FlakyBulk(engine, {}, reindex=False), "notes", PARAMS).reindex()
        assert (outcome.new, outcome.documents, outcome.server_side) == ("notes-v2", 5, False)
        assert engine.alias_targets("notes") == ["notes-v2"]
        assert stored(engine, "notes") == stored(engine, "notes-v1")
    finally:
        engine.close()


def test_a_throttled_or_unavailable_bulk_request_is_sent_again(engine: EmbeddedEngine) -> None:
    waits: list[float] = []
    busy = [
        Throttled("circuit_breaking_exception", url="u", operation="bulk write", status=429),
        EngineResponseError("unavailable_shards_exception", url="u", operation="bulk write", status=503),
    ]
    flaky = FlakyBulk(engine, {}, request_errors=busy)
    assert copy_documents(flaky, "src", "dst", page_size=10, sleep=waits.append) == 7
    assert flaky.bulk_sizes == [7, 7, 7]
    assert len(waits) == 2
    assert len(stored(engine, "dst")) == 7


def test_a_rejected_bulk_request_is_not_sent_again(engine: EmbeddedEngine) -> None:
    refused = RequestRejected("mapper_parsing_exception", url="u", operation="bulk write", status=400)
    flaky = FlakyBulk(engine, {}, request_errors=[refused])
    with pytest.raises(EngineResponseError, match="bulk request refused: mapper_parsing_exception"):
        copy_documents(flaky, "src", "dst", sleep=lambda _: None)
    assert flaky.bulk_sizes == [7]


class SkippingScan(FlakyBulk):
    """A scan that never reaches some documents, as search_after does for those without a chunk_id."""

    def __init__(self, engine: EmbeddedEngine, unreachable: set[str]) -> None:
        super().__init__(engine, {})
        self._unreachable = unreachable

    def scan(self, index: str, query: Any, fields: Any, **options: Any) -> Iterator[Any]:
        return (hit for hit in self._engine.scan(index, query, fields, **options) if hit.id not in self._unreachable)


def test_documents_the_scan_cannot_reach_make_the_copy_fail_with_the_reason(engine: EmbeddedEngine) -> None:
    with pytest.raises(
        EngineResponseError, match=r"copied 6 of the 7 documents in src: paging needs a unique chunk_id"
    ):
        copy_documents(SkippingScan(engine, {"d03#0"}), "src", "dst")


def test_a_reindex_leaves_behind_a_field_only_the_live_index_has(tmp_path: Path) -> None:
    # `mapping diff` says a reindex drops a field added to the live mapping by hand; the embedded reindex refused it.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", PARAMS).create()
        engine.put_mapping("notes-v1", {"added_by_hand": {"type": "keyword"}})
        document = {"chunk_id": "a#0", "doc_id": "a", "title": "kept", "vector": [0.5, 0.25], "added_by_hand": "x"}
        assert not engine.bulk("notes", [BulkAction("index", "a#0", document)]).failed
        engine.refresh("notes")

        outcome = IndexManager(engine, "notes", PARAMS).reindex()

        assert (outcome.new, outcome.documents) == ("notes-v2", 1)
        [hit] = engine.scan("notes", {"match_all": {}}, ["title", "vector", "added_by_hand"], sort_field="chunk_id")
        assert hit.source == {"title": "kept", "vector": [0.5, 0.25]}
    finally:
        engine.close()
