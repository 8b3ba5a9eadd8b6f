"""The OpenAPI document declares, for each route, the error statuses the route really answers (docs/service-api.md),
so that a client generated from it knows them."""

from __future__ import annotations

from typing import Any

from esbridge.service.app import create_app
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder
from tests.support.serving import uvicorn_thread
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, service_settings
from tests.unit.service.test_slow_bodies import status_of, unfinished_bodies


def declared(document: dict[str, Any], method: str, path: str) -> set[int]:
    return {int(status) for status in document["paths"][path][method]["responses"]}


def test_a_search_answers_409_model_mismatch_and_declares_it(make_client: ClientFactory) -> None:
    writer = make_client(api_keys=[KEY])
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).status_code == 200
    other = make_client(embedder=OtherHashingEmbedder())
    answer = other.post("/v1/search", json={"query": "sourdough"})
    assert (answer.status_code, answer.json()["error"]["kind"]) == (409, "model_mismatch")
    document = other.get("/openapi.json").json()
    assert 409 in declared(document, "post", "/v1/search")
    assert "model_mismatch" in document["paths"]["/v1/search"]["post"]["responses"]["409"]["description"]
    assert "model_mismatch" in document["paths"]["/v1/documents"]["post"]["responses"]["409"]["description"]


def test_metrics_answer_403_to_a_key_without_read_and_declare_it(make_client: ClientFactory, tmp_path: Any) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY} write\n", encoding="utf-8")
    keys.chmod(0o600)
    client = make_client(api_keys_file=keys, require_key_for_reads=True)
    answer = client.get("/metrics", headers={"X-API-Key": KEY})
    assert (answer.status_code, answer.json()["error"]["kind"]) == (403, "forbidden")
    assert 403 in declared(client.get("/openapi.json").json(), "get", "/metrics")


def test_a_body_that_does_not_arrive_is_408_and_every_route_taking_a_body_declares_it() -> None:
    app = create_app(service_settings(request_timeout_s=0.5), embedder=HashingEmbedder())
    with uvicorn_thread(app) as (_, url), unfinished_bodies(url, 1) as [sock]:
        assert status_of(sock)[0] == b"HTTP/1.1 408 Request Timeout"
        document = app.openapi()
    for path, operations in document["paths"].items():
        for method in operations:
            if method in ("post", "delete"):
                assert 408 in declared(document, method, path), (method, path)


def test_the_openapi_document_lists_the_bounds_the_service_enforces(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], max_query_chars=20, max_top_n=5, max_documents=2)
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    search = schemas["SearchRequest"]["properties"]
    assert (search["query"]["maxLength"], search["top_n"]["maximum"], search["top_n"]["default"]) == (20, 5, 5)
    documents = schemas["DocumentsRequest"]["properties"]["documents"]
    assert documents["maxItems"] == 2
    assert documents["description"].endswith(
        "at most 2 documents are written per request (service.max_documents): a registry record counts as its own "
        "document and one per tool and skill"
    )
    again = client.get("/openapi.json").json()["components"]["schemas"]["DocumentsRequest"]["properties"]
    assert again["documents"]["description"] == documents["description"]
    assert client.post("/v1/search", json={"query": "x" * 21}).status_code == 422
    assert client.post("/v1/search", json={"query": "x", "top_n": 6}).status_code == 422
    three = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert three.status_code == 422


def test_a_client_learns_the_limits_before_sending_and_a_refusal_names_its_setting(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], max_documents=2, max_body_bytes=4096, max_top_n=5)
    limits = client.get("/openapi.json").json()["info"]["x-esbridge-limits"]
    assert limits == {
        "max_body_bytes": 4096,
        "max_documents": 2,
        "max_query_chars": 1024,
        "max_top_n": 5,
        "request_timeout_s": 30.0,
    }
    three = client.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY})
    assert three.status_code == 422
    assert three.json()["error"]["message"] == (
        "body.documents: the 3 record(s) make 3 documents; at most 2 per request (service.max_documents): nothing "
        "was written; send them in several requests"
    )
    big = client.post("/v1/documents", content=b"{" + b" " * 5000 + b"}", headers={"X-API-Key": KEY})
    assert big.status_code == 413
    assert big.json()["error"]["message"] == "the request body is larger than 4096 bytes (service.max_body_bytes)"
    many = client.post("/v1/search", json={"query": "x", "top_n": 6})
    assert many.json()["error"]["message"] == "body.top_n: must be at most 5 (service.max_top_n)"
