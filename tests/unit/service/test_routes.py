"""Every route of the sidecar in-process, on the embedded engine: answers, status codes, limits."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from fastapi.testclient import TestClient

from esbridge.config import load_settings
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, fields, service_settings

WRITE = {"X-API-Key": KEY}


def search(client: TestClient, **body: Any) -> Any:
    return client.post("/v1/search", json=body)


def test_healthz_answers_while_nothing_else_is_ready(make_client: ClientFactory) -> None:
    client = make_client(model=False)
    answer = client.get("/healthz")
    assert (answer.status_code, answer.json()["status"]) == (200, "ok")


def test_search_answers_with_the_shared_response_model(client: TestClient) -> None:
    answer = search(client, query="sourdough starter", top_n=2, explain=True)
    assert answer.status_code == 200
    body = answer.json()
    assert body["search_mode"] == "hybrid"
    assert body["results"][0]["doc_id"] == "bread"
    assert body["results"][0]["score"] == 1.0
    assert set(body["results"][0]["explain"]["retrievers"]) == {"bm25", "knn"}
    assert len(body["results"]) <= 2


def test_search_filters_apply(client: TestClient) -> None:
    answer = search(client, query="power", filters={"terms": {"tags": ["energy"]}})
    assert {hit["doc_id"] for hit in answer.json()["results"]} <= {"solar", "wind"}


def test_search_without_a_model_degrades_to_lexical_and_says_why(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    client.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE)
    lexical = make_client(model=False)
    body = search(lexical, query="sourdough").json()
    assert body["search_mode"] == "lexical-only"
    assert body["results"][0]["doc_id"] == "bread"
    assert any("model" in warning for warning in body["warnings"])


def test_bad_search_requests_are_422_with_the_fields_named(client: TestClient) -> None:
    cases: Sequence[tuple[dict[str, Any], str]] = [
        ({}, "body.query"),
        ({"query": "   "}, "body.query"),
        ({"query": "x", "top_n": 0}, "body.top_n"),
        ({"query": "x", "top_n": "many"}, "body.top_n"),
        ({"query": "x", "colour": "red"}, "body.colour"),
        ({"query": "x", "filters": {"terms": {"secret_field": ["a"]}}}, "body.filters.terms"),
        ({"query": "x", "filters": {"modified_after": "yesterday-ish"}}, "body.filters.modified_after"),
    ]
    for body, field in cases:
        answer = client.post("/v1/search", json=body)
        assert answer.status_code == 422, body
        assert answer.json()["error"]["kind"] == "validation"
        assert field in fields(answer), (body, answer.json())


def test_a_body_that_is_not_json_is_400_invalid_json_saying_where(client: TestClient) -> None:
    as_json = {"Content-Type": "application/json"}
    malformed = client.post("/v1/search", content=b'{"query": "x",\n "top_n": }', headers=as_json)
    assert malformed.status_code == 400
    assert malformed.json()["error"] == {
        "kind": "invalid_json",
        "message": "the body is not valid JSON: Expecting value at line 2, column 11 (char 25)",
        "fields": [],
    }
    deep = client.post("/v1/documents", content=b"[" * 100_000 + b"]" * 100_000, headers={**as_json, **WRITE})
    assert deep.status_code == 400
    assert deep.json()["error"] == {
        "kind": "invalid_json",
        "message": "the body is not valid JSON: it is nested too deeply",
        "fields": [],
    }
    not_utf8 = client.post("/v1/search", content=b'{"query": "\xff"}', headers=as_json)
    assert (not_utf8.status_code, not_utf8.json()["error"]["kind"]) == (400, "invalid_json")
    long_number = client.post("/v1/search", content=b'{"query": "x", "top_n": ' + b"9" * 5000 + b"}", headers=as_json)
    assert long_number.status_code == 400
    assert long_number.json()["error"]["message"] == (
        "the body is not valid JSON: a number in it has 5000 digits, more than the 4300 it may have"
    )
    assert 'esbridge_errors_total{kind="invalid_json"} 4.0' in client.get("/metrics").text


def test_query_length_and_top_n_are_limited_by_settings(make_client: ClientFactory) -> None:
    client = make_client(max_query_chars=20, max_top_n=5)
    long = search(client, query="x" * 21)
    assert (long.status_code, fields(long)) == (422, ["body.query"])
    many = search(client, query="x", top_n=6)
    assert (many.status_code, fields(many)) == (422, ["body.top_n"])
    assert "at most 5" in many.json()["error"]["message"]
    beyond_the_model = search(client, query="x" * 5000)  # over SearchRequest's own 4,096 too
    assert (beyond_the_model.status_code, fields(beyond_the_model)) == (422, ["body.query"])
    assert beyond_the_model.json()["error"]["message"] == long.json()["error"]["message"]
    assert long.json()["error"]["message"] == "body.query: must have at most 20 characters (service.max_query_chars)"


def test_a_search_without_top_n_is_answered_when_the_configured_bound_is_below_the_default(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY], max_top_n=2)
    assert client.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE).status_code == 200
    answer = search(client, query="energy")  # top_n left out: its default, 10, is over the bound
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["results"]) == 2
    asked = search(client, query="energy", top_n=3)
    assert (asked.status_code, fields(asked)) == (422, ["body.top_n"])


def test_an_unknown_fusion_method_is_422(client: TestClient) -> None:
    answer = search(client, query="x", fusion="no-such-method")
    assert answer.status_code == 422
    assert "unknown fusion method" in answer.json()["error"]["message"]


def test_bodies_over_the_limit_are_413_declared_or_streamed(make_client: ClientFactory) -> None:
    client = make_client(max_body_bytes=2048)
    declared = client.post("/v1/search", json={"query": "x" * 4000})
    assert (declared.status_code, declared.json()["error"]["kind"]) == (413, "body_too_large")

    def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 500

    streamed = client.post("/v1/search", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    small = search(client, query="x")
    assert small.status_code != 413


def test_a_missing_index_is_503_with_retry_after(make_client: ClientFactory) -> None:
    client = make_client(retry_after_s=7)
    answer = search(client, query="anything")
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "7"
    assert answer.json()["error"]["kind"] == "index_missing"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_engine_is_503_with_retry_after(make_client: ClientFactory) -> None:
    settings = load_settings(
        url=f"http://127.0.0.1:{_closed_port()}", engine="opensearch", retries=0, timeout_s=2, index="notes"
    )
    client = make_client(settings)
    answer = search(client, query="anything")
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "5"
    assert answer.json()["error"]["kind"] == "engine_unavailable"
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"]["engine"] != "ok"


def test_no_answer_within_the_request_timeout_is_504(make_client: ClientFactory) -> None:
    """Connecting counts against the request's time: an engine that takes connections and never answers, whose
    kind the first request detects, which the engine client would wait 2 x 4 s for. (A slow stage of the search
    itself gives up before the 504 instead: tests/unit/service/test_search_deadline.py.)"""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        settings = load_settings(url=url, retries=1, timeout_s=4, index="notes", service={"request_timeout_s": 0.5})
        answer = search(make_client(settings), query="sourdough")
    assert answer.status_code == 504, answer.text
    assert answer.json()["error"]["kind"] == "timeout"


def test_readyz_needs_engine_index_and_model(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    before = client.get("/readyz")
    assert before.status_code == 503
    assert before.json()["checks"]["engine"] == "ok"
    assert "no such index" in before.json()["checks"]["index"]
    client.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE)
    after = client.get("/readyz")
    assert (after.status_code, after.json()) == (
        200,
        {"status": "ready", "checks": {"engine": "ok", "index": "ok", "model": "ok"}},
    )
    without_model = make_client(model=False).get("/readyz")
    assert without_model.status_code == 503
    assert without_model.json()["checks"]["model"] != "ok"


def test_unknown_routes_and_methods_answer_json_errors(client: TestClient) -> None:
    missing = client.get("/v2/nothing")
    assert (missing.status_code, missing.json()["error"]["kind"]) == (404, "not_found")
    wrong = client.get("/v1/search")
    assert (wrong.status_code, wrong.json()["error"]["kind"]) == (405, "method_not_allowed")


class BrokenEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("secret internal detail /srv/model.bin")


def test_an_unexpected_error_is_500_without_a_traceback(make_client: ClientFactory) -> None:
    client = make_client(service_settings(api_keys=[KEY]), BrokenEmbedder())
    answer = client.post("/v1/documents", json={"documents": [{"id": "x", "text": "y"}]}, headers=WRITE)
    assert answer.status_code == 500
    assert answer.json()["error"]["kind"] == "internal"
    assert "secret internal detail" not in answer.text
    assert "Traceback" not in answer.text


def test_metrics_count_routes_stages_errors_and_modes(client: TestClient) -> None:
    search(client, query="sourdough")
    search(client, query="")
    client.delete("/v1/documents/nothing-here", headers=WRITE)
    text = client.get("/metrics").text
    assert 'esbridge_http_request_duration_seconds_count{method="POST",route="/v1/search",status="200"} 1.0' in text
    assert 'route="/v1/documents/{doc_id}",status="404"' in text
    assert 'esbridge_searches_total{search_mode="hybrid"} 1.0' in text
    assert 'esbridge_errors_total{kind="validation"} 1.0' in text
    assert 'esbridge_errors_total{kind="not_found"} 1.0' in text
    assert 'esbridge_search_stage_duration_seconds_count{stage="embed"} 1.0' in text
    assert 'esbridge_search_stage_duration_seconds_count{stage="total"} 1.0' in text


def test_a_search_answered_from_the_cache_adds_no_stage_time(client: TestClient) -> None:
    # Its embed, bm25 and knn ran once, for the first answer; the cached copy holds their timings as they were.
    search(client, query="sourdough")
    search(client, query="sourdough")
    text = client.get("/metrics").text
    assert 'esbridge_search_cache_total{result="hit"} 1.0' in text
    assert 'esbridge_search_stage_duration_seconds_count{stage="embed"} 1.0' in text
    assert 'esbridge_search_stage_duration_seconds_count{stage="total"} 2.0' in text


def test_methods_no_route_takes_share_one_metrics_label(client: TestClient) -> None:
    """Any token is a method to HTTP/1.1: one label per method sent would let any caller grow the metrics."""
    for number in range(20):
        assert client.request(f"NOSUCH{number}", "/healthz").status_code == 405
    text = client.get("/metrics").text
    assert "NOSUCH" not in text
    assert 'esbridge_http_request_duration_seconds_count{method="other",route="/healthz",status="405"} 20.0' in text


def test_each_app_has_its_own_metrics(make_client: ClientFactory, client: TestClient) -> None:
    search(client, query="sourdough")
    other = make_client()
    assert "esbridge_searches_total{" not in other.get("/metrics").text


def test_the_openapi_document_describes_every_route(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert set(document["paths"]) == {
        "/v1/search",
        "/v1/documents",
        "/v1/documents/{doc_id}",
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/admin/keys/reload",
    }
    search_op = document["paths"]["/v1/search"]["post"]
    assert search_op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchRequest")
    schemes = document["components"]["securitySchemes"]
    assert {scheme["type"] for scheme in schemes.values()} == {"http", "apiKey"}


def test_cors_is_off_unless_origins_are_configured(make_client: ClientFactory) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    off = make_client().options("/v1/search", headers=preflight)
    assert "access-control-allow-origin" not in off.headers
    on = make_client(cors_origins="https://app.example").options("/v1/search", headers=preflight)
    assert on.headers["access-control-allow-origin"] == "https://app.example"
    other = make_client(cors_origins="https://app.example").options(
        "/v1/search", headers={**preflight, "Origin": "https://evil.example"}
    )
    assert "access-control-allow-origin" not in other.headers


def test_a_refused_cors_preflight_answers_403_in_the_error_shape(make_client: ClientFactory) -> None:
    client = make_client(cors_origins="https://app.example")
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    answer = client.options("/v1/search", headers=preflight)
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "error": {
            "kind": "cors_refused",
            "message": "CORS preflight refused: origin https://evil.example is not in service.cors_origins",
            "fields": [],
        }
    }
    assert "access-control-allow-origin" not in answer.headers
    metrics = client.get("/metrics").text
    assert 'esbridge_errors_total{kind="cors_refused"} 1.0' in metrics


def test_a_cors_preflight_for_a_method_or_header_not_allowed_says_which(make_client: ClientFactory) -> None:
    client = make_client(cors_origins="https://app.example")
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "Content-Type, X-Secret",
    }
    answer = client.options("/v1/search", headers=preflight)
    assert answer.status_code == 403
    assert answer.json()["error"]["message"] == (
        "CORS preflight refused: method PUT is not allowed; header(s) X-Secret not allowed"
    )


def test_a_browser_caller_may_read_retry_after_and_the_request_id(make_client: ClientFactory) -> None:
    client = make_client(cors_origins="https://app.example")
    answer = client.post("/v1/search", json={"query": "x"}, headers={"Origin": "https://app.example"})
    assert (answer.status_code, answer.headers["Retry-After"]) == (503, "5")  # no index yet
    exposed = {name.strip().lower() for name in answer.headers.get("access-control-expose-headers", "").split(",")}
    assert {"retry-after", "x-request-id"} <= exposed


ROUTED = [
    {"id": "cve-db", "title": "Vulnerability database", "text": "Look up a CVE and its exploit.",
     "category": "security"},
    {"id": "flag-bot", "title": "Capture bot", "text": "Look up a CVE write-up for the flag.", "category": "ctf"},
    {"id": "linter", "title": "Python linter", "text": "Look up style problems in Python code.",
     "category": "development"},
]  # fmt: skip


def routed_client(make_client: ClientFactory) -> TestClient:
    settings = load_settings(
        index="notes",
        service={"api_keys": [KEY]},
        routing={"security": ["cve", "exploit"], "development": ["python", "linter"]},
    )
    client = make_client(settings)
    assert client.post("/v1/documents", json={"documents": ROUTED}, headers=WRITE).is_success
    return client


def test_a_query_naming_a_categorys_keywords_is_searched_in_that_category(make_client: ClientFactory) -> None:
    client = routed_client(make_client)
    body = search(client, query="look up a cve exploit").json()
    assert {hit["doc_id"] for hit in body["results"]} == {"cve-db"}  # flag-bot mentions a CVE too
    routing = body["details"]["routing"]
    assert routing == {"category": "security", "reason": "the query names security's keywords",
                       "keywords": ["cve", "exploit"]}  # fmt: skip
    unrouted = search(client, query="look up").json()
    assert unrouted["details"]["routing"]["category"] is None
    assert {hit["doc_id"] for hit in unrouted["results"]} == {"cve-db", "flag-bot", "linter"}


def test_a_category_the_request_names_wins_over_the_keywords(make_client: ClientFactory) -> None:
    client = routed_client(make_client)
    body = search(client, query="look up a cve exploit", category="development").json()
    assert [hit["doc_id"] for hit in body["results"]] == ["linter"]
    assert body["details"]["routing"]["reason"] == "the request names the category"


def test_an_unknown_category_is_422_naming_the_valid_ones(make_client: ClientFactory) -> None:
    client = routed_client(make_client)
    answer = search(client, query="look up", category="crypto")
    assert answer.status_code == 422
    assert answer.json()["error"]["message"] == "unknown category 'crypto'; categories: development, security"


def test_health_and_readiness_answer_head_as_they_answer_get(make_client: ClientFactory) -> None:
    client = make_client()
    for route in ("/healthz", "/readyz"):
        got, head = client.get(route), client.head(route)
        assert head.status_code == got.status_code, route
        assert head.content == b"", route
    assert client.head("/readyz").status_code == 503  # no index yet: HEAD says so too
