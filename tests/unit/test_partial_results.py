"""Partial and failed searches as the engines answer them: shard counts read from real answer shapes."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.errors import from_response
from esbridge.engines.responses import counted, msearch_results, search_result

URL = "http://127.0.0.1:9210"

# What OpenSearch 3.6 answered for a 3-shard index with two primaries unassigned: not "failed", only
# missing from "successful".
OPENSEARCH_TWO_UNASSIGNED: dict[str, Any] = {
    "took": 228,
    "timed_out": False,
    "_shards": {"total": 3, "successful": 1, "skipped": 0, "failed": 0},
    "hits": {"total": {"value": 1, "relation": "eq"}, "max_score": 1.0, "hits": [{"_id": "5", "_score": 1.0}]},
}
# What Elasticsearch 9.5 answered for the same index: both counted as failed, one failure listed.
ELASTICSEARCH_TWO_UNASSIGNED: dict[str, Any] = {
    "took": 77,
    "timed_out": False,
    "_shards": {
        "total": 3,
        "successful": 1,
        "skipped": 0,
        "failed": 2,
        "failures": [
            {
                "shard": 1,
                "index": "x",
                "node": None,
                "reason": {"type": "no_shard_available_action_exception", "reason": None},
            }
        ],
    },
    "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
}
# Skipped shards (the can-match phase found nothing they could hold) are counted as successful too: what
# OpenSearch 3.6 answered for a 2-shard index paged past one shard's last sort value, and what
# elastic/elasticsearch#54235 says of Elasticsearch ("we consider that a skipped shard is a successful shard").
WHOLE: dict[str, Any] = {
    "took": 3,
    "timed_out": False,
    "_shards": {"total": 2, "successful": 2, "skipped": 1, "failed": 0},
    "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []},
}
# A shard skipped while another has no active copy: the skipped one is among the successful.
SKIPPED_AND_UNASSIGNED: dict[str, Any] = {
    "took": 3,
    "timed_out": False,
    "_shards": {"total": 3, "successful": 2, "skipped": 1, "failed": 0},
    "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []},
}


def test_an_opensearch_answer_with_unassigned_shards_is_partial_though_none_failed() -> None:
    result = search_result(OPENSEARCH_TWO_UNASSIGNED, url=URL, index="x")
    assert result.shards is not None
    assert result.shards.missing == 2
    assert result.partial == (
        "partial results: 2 of 3 shards did not answer; documents on those shards are missing from the answer"
    )


def test_an_elasticsearch_answer_with_failed_shards_names_the_failure() -> None:
    result = search_result(ELASTICSEARCH_TWO_UNASSIGNED, url=URL, index="x")
    assert result.partial is not None
    assert result.partial.startswith(
        "partial results: 2 of 3 shards did not answer (no_shard_available_action_exception)"
    )


def test_skipped_shards_are_not_missing() -> None:
    result = search_result(WHOLE, url=URL, index="x")
    assert result.shards is not None and result.shards.missing == 0
    assert result.partial is None


def test_a_skipped_shard_does_not_hide_one_that_did_not_answer() -> None:
    result = search_result(SKIPPED_AND_UNASSIGNED, url=URL, index="x")
    assert result.shards is not None and result.shards.missing == 1
    assert result.partial is not None and "1 of 3 shards did not answer" in result.partial


def test_a_timed_out_answer_is_partial() -> None:
    result = search_result({**WHOLE, "timed_out": True}, url=URL, index="x")
    assert result.partial is not None and "time limit" in result.partial


def test_an_answer_without_a_shards_section_is_whole() -> None:
    result = search_result({"took": 1, "hits": {"total": 0, "hits": []}}, url=URL, index="x")
    assert result.shards is None and result.partial is None


def test_msearch_reads_shards_per_search() -> None:
    answer = {"responses": [WHOLE, OPENSEARCH_TWO_UNASSIGNED]}
    first, second = msearch_results(answer, 2, url=URL, index="x")
    assert not isinstance(first, Exception) and first.partial is None
    assert not isinstance(second, Exception) and second.partial is not None


def test_all_shards_failing_is_an_index_unavailable_error_naming_the_index() -> None:
    # OpenSearch 3.6's answer for an index none of whose primaries could be allocated
    body = {
        "error": {
            "root_cause": [],
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
            "phase": "query",
            "grouped": True,
            "failed_shards": [],
        },
        "status": 503,
    }
    error = from_response(503, body, url=URL, operation="search", index="notes-v2")
    assert isinstance(error, errors.IndexUnavailable)
    assert "index 'notes-v2'" in str(error)
    assert "the index is red" in str(error)


def test_all_shards_failing_on_a_bad_query_is_not_an_unavailable_index() -> None:
    body = {"error": {"type": "search_phase_execution_exception", "reason": "all shards failed"}, "status": 400}
    assert isinstance(from_response(400, body, url=URL, operation="search", index="x"), errors.RequestRejected)


# What OpenSearch 3.6 and Elasticsearch 9 answered to ``_count`` on an alias over a whole index and one whose
# only shard has no active copy.
OPENSEARCH_COUNT: dict[str, Any] = {"count": 1, "_shards": {"total": 2, "successful": 1, "skipped": 0, "failed": 0}}
ELASTICSEARCH_COUNT: dict[str, Any] = {
    "count": 1,
    "_shards": {
        "total": 2,
        "successful": 1,
        "skipped": 0,
        "failed": 1,
        "failures": [
            {"shard": 0, "index": "x-red", "node": None, "reason": {"type": "no_shard_available_action_exception"}}
        ],
    },
}


@pytest.mark.parametrize("answer", [OPENSEARCH_COUNT, ELASTICSEARCH_COUNT], ids=["opensearch", "elasticsearch"])
def test_a_count_that_lacks_shards_is_refused(answer: dict[str, Any]) -> None:
    with pytest.raises(errors.IndexUnavailable) as raised:
        counted(answer, url=URL, index="x")
    assert "1 of 2 shards did not answer" in str(raised.value)
    assert "index 'x'" in str(raised.value)


def test_a_whole_count_is_given() -> None:
    assert (
        counted({"count": 7, "_shards": {"total": 2, "successful": 2, "skipped": 1, "failed": 0}}, url=URL, index="x")
        == 7
    )
    assert counted({"count": 3}, url=URL, index="x") == 3  # the embedded engine's shape: no shards
