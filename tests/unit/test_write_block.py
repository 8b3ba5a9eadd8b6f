"""The write block ``esbridge index reindex`` sets: how it is read, reported to writers, and kept by the
embedded engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction, BulkItemFailure
from esbridge.engines.blocks import (
    cluster_block_reason,
    confirm_write_block,
    explain_write_block,
    write_blocked,
    write_blocked_reason,
)
from esbridge.engines.bulk import BulkWriter
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineResponseError
from esbridge.ingest.run import write_block_warnings
from esbridge.mappings.schema import IndexParameters, render_index

CLUSTER_REASON = "cluster_block_exception: index [notes-v1] blocked by: [FORBIDDEN/8/index write (api)];"
READ_ONLY = "cluster_block_exception: index [x] blocked by: [FORBIDDEN/5/index read-only (api)];"
DISK_FULL = (
    "cluster_block_exception: index [x] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage "
    "watermark, index has read-only-allow-delete block];"
)


@pytest.mark.parametrize(
    ("settings", "blocked"),
    [
        ({"blocks": {"write": "true"}}, True),
        ({"blocks": {"write": True}}, True),
        ({"blocks.write": "true"}, True),
        ({"blocks": {"write": "false"}}, False),
        ({"blocks": {"read_only_allow_delete": "true"}}, False),
        ({"number_of_shards": "1"}, False),
    ],
)
def test_write_blocked_reads_the_setting_as_engines_report_it(settings: dict[str, Any], blocked: bool) -> None:
    assert write_blocked(settings) is blocked


@pytest.mark.parametrize(
    ("failure", "blocked", "retryable"),
    [
        (BulkItemFailure("a", 403, CLUSTER_REASON), True, False),
        (BulkItemFailure("a", 403, cluster_block_reason("notes-v1")), True, False),
        (BulkItemFailure("a", 403, "security_exception: no permissions for [indices:data/write/bulk]"), False, False),
        (BulkItemFailure("a", 403, READ_ONLY), False, False),
        (BulkItemFailure("a", 429, DISK_FULL), False, True),
    ],
)
def test_only_the_write_block_counts_as_write_blocked(failure: BulkItemFailure, blocked: bool, retryable: bool) -> None:
    assert (failure.write_blocked, failure.retryable) == (blocked, retryable)


def test_the_embedded_engine_words_a_refusal_as_the_clusters_do() -> None:
    assert cluster_block_reason("notes-v1") == CLUSTER_REASON


def test_a_write_block_refusal_says_what_happened_and_what_to_do() -> None:
    explained = explain_write_block(BulkItemFailure("n#0", 403, CLUSTER_REASON), "notes")
    assert (explained.id, explained.status) == ("n#0", 403)
    assert explained.reason == write_blocked_reason("notes", CLUSTER_REASON)
    assert explained.reason.startswith("notes is write-blocked, probably because `esbridge index reindex` is copying")
    assert "interrupted: run `esbridge index reindex` again" in explained.reason
    assert "nothing was written" in explained.reason
    assert explained.reason.endswith(f"[{CLUSTER_REASON}]"), "the engine's own words are kept"
    assert explained.write_blocked and not explained.retryable
    assert explain_write_block(explained, "notes") == explained, "explained once, not twice"


def test_other_refusals_keep_their_reason() -> None:
    failure = BulkItemFailure("n#0", 400, "mapper_parsing_exception: bad")
    assert explain_write_block(failure, "notes") is failure


def test_write_block_warnings_count_the_refused_writes() -> None:
    failures = [
        BulkItemFailure("a", 403, CLUSTER_REASON),
        BulkItemFailure("b", 403, CLUSTER_REASON),
        BulkItemFailure("c", 400, "mapper_parsing_exception: bad"),
    ]
    (warning,) = write_block_warnings(failures, "notes")
    assert warning.startswith("2 chunk write(s) were refused because the index behind notes is write-blocked")
    assert "run this command again once the reindex has finished" in warning
    assert write_block_warnings(failures[2:], "notes") == []


@pytest.mark.parametrize(
    "answer",
    [
        {"acknowledged": True, "shards_acknowledged": True, "indices": [{"name": "x", "blocked": True}]},
        {"acknowledged": True, "shards_acknowledged": False, "indices": []},  # it had the block already
    ],
)
def test_an_add_block_answer_is_accepted_when_the_block_is_in_place(answer: dict[str, Any]) -> None:
    confirm_write_block(answer, url="http://e", index="x")


def test_an_add_block_answer_without_every_shard_is_an_error() -> None:
    answer = {"acknowledged": True, "shards_acknowledged": False, "indices": [{"name": "x", "blocked": False}]}
    with pytest.raises(EngineResponseError, match="not confirmed by every shard"):
        confirm_write_block(answer, url="http://e", index="x")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    engine.create_index("notes-v1", render_index("opensearch", IndexParameters(dimension=2)))
    engine.update_aliases([{"add": {"index": "notes-v1", "alias": "notes", "is_write_index": True}}])
    yield engine
    engine.close()


def chunk(chunk_id: str) -> BulkAction:
    return BulkAction("index", chunk_id, {"chunk_id": chunk_id, "doc_id": chunk_id.split("#")[0], "title": "t"})


def test_the_embedded_write_block_is_kept_in_the_database(engine: EmbeddedEngine, tmp_path: Path) -> None:
    engine.set_write_block("notes-v1", True)
    engine.close()
    reopened = EmbeddedEngine(tmp_path / "data")
    try:
        assert write_blocked(reopened.get_index_settings("notes"))
        refused = reopened.bulk("notes", [chunk("a#0")])
        assert [(failure.id, failure.status, failure.reason) for failure in refused.failed] == [
            ("a#0", 403, CLUSTER_REASON)
        ]
        reopened.create_index("src", render_index("opensearch", IndexParameters(dimension=2)))
        reopened.bulk("src", [chunk("b#0")])
        with pytest.raises(EngineResponseError, match="failed to copy, first: cluster_block_exception"):
            reopened.reindex("src", "notes-v1")
    finally:
        reopened.close()


def test_an_index_created_with_the_block_refuses_writes(engine: EmbeddedEngine) -> None:
    body = render_index("opensearch", IndexParameters(dimension=2))
    engine.create_index("frozen", {**body, "settings": {**body["settings"], "index.blocks.write": True}})
    assert engine.bulk("frozen", [chunk("a#0")]).failed[0].write_blocked


def test_the_bulk_writer_gives_up_at_once_and_says_why(engine: EmbeddedEngine) -> None:
    engine.set_write_block("notes-v1", True)
    waits: list[float] = []
    writer = BulkWriter(engine, "notes", sleep=waits.append)
    totals = writer.write([chunk("a#0"), chunk("b#0")])
    assert (totals.succeeded, waits, totals.requests) == ([], [], 1)
    assert [failure.reason for failure in totals.failed] == [write_blocked_reason("notes", CLUSTER_REASON)] * 2
    engine.set_write_block("notes-v1", False)
    assert writer.write([chunk("a#0")]).succeeded == ["a#0"]
