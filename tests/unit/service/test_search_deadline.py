"""A search in the sidecar ends its stages within the request's time (``service.request_timeout_s``), less the
moment its answer takes: a stage slower than that gives up with the answer's warning, and the search answers
200 where it would have answered 504. Embedded engine, hashing embedder."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from esbridge.config import load_settings
from esbridge.config.pipeline import RerankSettings
from esbridge.query.rerank import RERANKERS, Reranker
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory

TIMEOUT_S = 3.0  # the request's time; each slow stage's own timeout is well past it
SLOW = "glacier"  # a query word the slow stages wait on


class SlowReranker:
    name = "slow"

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.released.wait(30)
        return [0.0] * len(texts)


class SlowQueryEmbedder(HashingEmbedder):
    """Embeds passages at once, and a query holding ``SLOW`` only once released."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(SLOW in text for text in texts):
            self.released.wait(30)
        return super().embed(texts)


def written(make_client: ClientFactory) -> None:
    writer = make_client(api_keys=[KEY])
    assert writer.post("/v1/documents", json={"documents": RECORDS}, headers={"X-API-Key": KEY}).status_code == 200


def test_a_re_ranker_slower_than_the_request_gives_up_with_a_warning_before_the_504(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, released: threading.Event
) -> None:
    def slow(settings: RerankSettings) -> Reranker:
        return SlowReranker(released)

    monkeypatch.setitem(RERANKERS, "slow", slow)
    written(make_client)
    rerank = {"enabled": True, "name": "slow", "timeout_s": 20.0}
    settings = load_settings(index="notes", pipeline={"rerank": rerank}, service={"request_timeout_s": TIMEOUT_S})
    client = make_client(settings)
    warm = client.post("/v1/search", json={"query": "sunlight", "rerank": False})  # opens the index
    assert warm.status_code == 200, warm.text

    began = time.monotonic()
    answer = client.post("/v1/search", json={"query": f"sunlight {SLOW}"})
    took = time.monotonic() - began
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["results"] and body["results"][0]["id"].startswith("solar#")  # the fused order, kept
    [warning] = [w for w in body["warnings"] if w.startswith("re-ranking was not applied")]
    assert warning.endswith("(what was left of the search's time)")
    assert took < TIMEOUT_S


def test_a_query_embedding_slower_than_the_request_leaves_a_lexical_answer_before_the_504(
    make_client: ClientFactory, released: threading.Event
) -> None:
    written(make_client)
    slow = {"embed_timeout_s": 20.0}
    settings = load_settings(index="notes", pipeline=slow, service={"request_timeout_s": TIMEOUT_S})
    client = make_client(settings, embedder=SlowQueryEmbedder(released))
    assert client.post("/v1/search", json={"query": "sunlight"}).status_code == 200  # opens the index

    began = time.monotonic()
    answer = client.post("/v1/search", json={"query": f"sunlight {SLOW}"})
    took = time.monotonic() - began
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["search_mode"] == "lexical-only"
    assert body["results"][0]["id"].startswith("solar#")
    assert any(w.startswith("the query was not embedded within 2.") for w in body["warnings"]), body["warnings"]
    assert took < TIMEOUT_S
