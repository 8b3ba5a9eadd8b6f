"""Every answer, from a route or refused by a middleware, tells caches to keep nothing and browsers not to sniff."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.unit.service.conftest import KEY, ClientFactory


def test_every_answer_is_not_stored_and_not_sniffed(client: TestClient, make_client: ClientFactory) -> None:
    small = make_client(api_keys=[KEY], max_body_bytes=1024)
    answers = {
        "search": client.post("/v1/search", json={"query": "solar"}),
        "validation error": client.post("/v1/search", json={"query": "solar", "top_n": 0}),
        "unauthorized write": client.delete("/v1/documents/solar"),
        "body too large (middleware)": small.post("/v1/search", content=b"{" + b" " * 2000 + b"}"),
        "health": client.get("/healthz"),
        "metrics": client.get("/metrics"),
        "unknown route": client.get("/nowhere"),
    }
    for name, answer in answers.items():
        assert answer.headers.get("cache-control") == "no-store", name
        assert answer.headers.get("x-content-type-options") == "nosniff", name
        assert answer.headers.get_list("cache-control") == ["no-store"], name
