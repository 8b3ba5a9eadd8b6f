from __future__ import annotations

import socket

import elastic_transport
import elasticsearch
import pytest
from opensearchpy import exceptions as ox

from esbridge import errors
from esbridge.config import load_settings
from esbridge.engines import elasticsearch as es_adapter
from esbridge.engines import opensearch as os_adapter
from esbridge.engines.errors import error_type_and_reason, from_response

URL = "http://search.example:9200"


def error_body(kind: str, reason: str) -> dict[str, object]:
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}, "status": 0}


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (404, error_body("index_not_found_exception", "no such index [x]"), errors.IndexNotFound),
        (400, error_body("resource_already_exists_exception", "index [x] already exists"), errors.IndexAlreadyExists),
        (401, error_body("security_exception", "unable to authenticate user [bob]"), errors.AuthenticationError),
        (401, "Unauthorized", errors.AuthenticationError),
        (
            403,
            error_body("security_exception", "action [indices:data/read] is unauthorized"),
            errors.AuthorizationError,
        ),
        (
            403,
            error_body("security_exception", "current license is non-compliant for [Reciprocal Rank Fusion (RRF)]"),
            errors.UnsupportedFeature,
        ),
        (429, error_body("es_rejected_execution_exception", "rejected execution"), errors.Throttled),
        (400, error_body("mapper_parsing_exception", "failed to parse"), errors.RequestRejected),
        (500, error_body("null_pointer_exception", "boom"), errors.EngineResponseError),
        (None, None, errors.EngineResponseError),
    ],
)
def test_from_response_classifies(status: int | None, body: object, expected: type[errors.EngineError]) -> None:
    error = from_response(status, body, url=URL, operation="search", index="notes")
    assert type(error) is expected
    assert URL in str(error)
    assert "'notes'" in str(error)
    assert str(error).startswith("search failed on")


def test_reason_prefers_root_cause_and_keeps_type() -> None:
    kind, reason = error_type_and_reason(error_body("index_not_found_exception", "no such index [x]"))
    assert (kind, reason) == ("index_not_found_exception", "no such index [x]")
    error = from_response(404, error_body("index_not_found_exception", "no such index [x]"), url=URL, operation="x")
    assert "index_not_found_exception: no such index [x]" in str(error)


# OpenSearch 3.6's answer (2026-11-29) to `{"timeout": "1ms", "query": {"wildcard": {"t": "*a*b*"}}}` over 20,000
# documents of random words, its rewrite outlasting the millisecond; Elasticsearch answers such a search 200 with
# `timed_out` and no hits. Whether OpenSearch runs out there depends on how warm it is, so it is kept here.
TIME_EXCEEDED = {
    "error": {
        "root_cause": [{"type": "time_exceeded_exception", "reason": None}],
        "type": "search_phase_execution_exception",
        "reason": "all shards failed",
        "phase": "query",
        "grouped": True,
        "failed_shards": [
            {"shard": 0, "index": "probe", "node": "srj6gxol", "reason": {"type": "time_exceeded_exception"}}
        ],
        "caused_by": {"type": "time_exceeded_exception", "reason": None},
    },
    "status": 500,
}


def test_a_timeout_that_ran_out_before_any_shard_answered_is_a_timeout() -> None:
    # Before: an EngineResponseError, which a retriever reports as a failing engine, not as out of time.
    error = from_response(500, TIME_EXCEEDED, url="http://os:9200", operation="search", index="probe")
    assert isinstance(error, errors.EngineTimeout)
    assert "the request's `timeout` ran out before any shard had results (time_exceeded_exception)" in str(error)


def test_opensearch_connection_errors_are_translated() -> None:
    refused = ox.ConnectionError("N/A", "refused", ConnectionRefusedError(111, "Connection refused"))
    timeout = ox.ConnectionTimeout("TIMEOUT", "timed out", TimeoutError())
    tls = ox.SSLError("N/A", "cert", OSError("certificate verify failed"))
    auth = ox.AuthenticationException(401, "Unauthorized", "Unauthorized")
    assert type(os_adapter.translate(refused, url=URL, operation="probe", index=None)) is errors.EngineUnavailable
    assert type(os_adapter.translate(timeout, url=URL, operation="probe", index=None)) is errors.EngineTimeout
    tls_error = os_adapter.translate(tls, url=URL, operation="probe", index=None)
    assert type(tls_error) is errors.TLSError
    assert "certificate verify failed" in str(tls_error)
    assert type(os_adapter.translate(auth, url=URL, operation="probe", index=None)) is errors.AuthenticationError


def test_opensearch_async_errors_keep_the_reason_the_client_left_unparsed() -> None:
    # AsyncHttpConnection raises with the raw body in ``error`` and no parsed ``info``
    raw = (
        '{"error":{"root_cause":[{"type":"query_shard_exception","reason":"Query vector has invalid dimension: 384. '
        'Dimension should be: 768"}],"type":"search_phase_execution_exception","reason":"all shards failed"},'
        '"status":400}'
    )
    error = os_adapter.translate(ox.RequestError(400, raw, None), url=URL, operation="search", index="notes")
    assert type(error) is errors.RequestRejected
    assert "query_shard_exception: Query vector has invalid dimension: 384. Dimension should be: 768" in str(error)
    missing = ox.NotFoundError(404, '{"error":{"type":"index_not_found_exception","reason":"no such index [x]"}}', None)
    assert "no such index [x]" in str(os_adapter.translate(missing, url=URL, operation="search", index="x"))
    plain = os_adapter.translate(ox.TransportError(502, "Bad Gateway", None), url=URL, operation="search", index=None)
    assert "Bad Gateway" in str(plain)


def _api_error(cls: type[elasticsearch.ApiError], status: int, body: object) -> elasticsearch.ApiError:
    meta = elastic_transport.ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=elastic_transport.HttpHeaders(),
        duration=0.0,
        node=elastic_transport.NodeConfig("http", "127.0.0.1", 9200),
    )
    return cls(message="x", meta=meta, body=body)


def test_elasticsearch_errors_are_translated() -> None:
    missing = _api_error(elasticsearch.NotFoundError, 404, error_body("index_not_found_exception", "no such index"))
    auth = _api_error(elasticsearch.AuthenticationException, 401, error_body("security_exception", "bad creds"))
    product = _api_error(elasticsearch.UnsupportedProductError, 200, {})
    refused = elastic_transport.ConnectionError("Connection refused")
    timeout = elastic_transport.ConnectionTimeout("timed out")
    tls = elastic_transport.TlsError("certificate verify failed")

    def kind(exc: Exception) -> type[errors.EngineError]:
        return type(es_adapter.translate(exc, url=URL, operation="probe", index="i"))

    assert kind(missing) is errors.IndexNotFound
    assert kind(auth) is errors.AuthenticationError
    assert kind(product) is errors.EngineResponseError
    assert "does not identify as Elasticsearch" in str(
        es_adapter.translate(product, url=URL, operation="p", index=None)
    )
    assert kind(refused) is errors.EngineUnavailable
    assert kind(timeout) is errors.EngineTimeout
    assert kind(tls) is errors.TLSError


def test_every_engine_error_is_an_esbridge_error() -> None:
    error = errors.EngineTimeout("slow", url=URL, operation="search")
    assert isinstance(error, errors.EngineUnavailable)
    assert isinstance(error, errors.EsbridgeError)
    assert error.url == URL and error.operation == "search" and error.index is None


def test_dependency_missing_names_the_install_command() -> None:
    assert "pip install 'esbridge[aws]'" in str(errors.DependencyMissing("boto3", extra="aws", purpose="signing"))


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.parametrize("adapter", [os_adapter.OpenSearchEngine, es_adapter.ElasticsearchEngine])
def test_a_refused_connection_names_its_cause_with_or_without_retries(
    retries: int, adapter: type[os_adapter.OpenSearchEngine | es_adapter.ElasticsearchEngine]
) -> None:
    with socket.socket() as closed:  # a loopback port nothing listens on once it is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    engine = adapter(load_settings(url=f"http://127.0.0.1:{port}", retries=retries))
    try:
        with pytest.raises(errors.EngineUnavailable, match=r"cannot connect \(.*Connection refused"):
            engine.search("notes", {"query": {"match_all": {}}})
    finally:
        engine.close()
