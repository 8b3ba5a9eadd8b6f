"""The sidecar's write routes in-process, on the embedded engine: per-document answers, replacement,
links, validation, deletes and write blocks."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, RECORDS, ClientFactory, fields

WRITE = {"X-API-Key": KEY}


def search(client: TestClient, **body: Any) -> Any:
    return client.post("/v1/search", json=body)


def test_upsert_answers_per_document_and_one_bad_record_does_not_fail_the_batch(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    documents = [
        {"id": "a", "title": "Alpha", "text": "first document about tides"},
        {"id": 3.5, "title": "bad id"},
        {"title": "no id"},
        {"id": "a", "title": "again"},
        {"id": "b", "title": "Beta", "text": "second", "links": ["a", "elsewhere"], "tags": "one-tag"},
        {"id": "c", "modified_at": "not a date"},
    ]
    answer = client.post("/v1/documents", json={"documents": documents}, headers=WRITE)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["index"], body["written"], body["failed"]) == ("notes", 2, 4)
    results = body["results"]
    assert [result["status"] for result in results] == ["ok", "error", "error", "error", "ok", "error"]
    assert [result["position"] for result in results] == list(range(6))
    assert "field 'id'" in results[1]["error"]
    assert "field 'id' is missing" in results[2]["error"]
    assert "duplicate id 'a'" in results[3]["error"]
    assert results[5]["id"] == "c"
    assert "modified_at" in results[5]["error"]
    assert results[0]["chunks"] == 1
    hit = search(client, query="tides", explain=True).json()["results"][0]
    assert hit["doc_id"] == "a"


def test_an_upsert_replaces_the_document_and_drops_chunks_it_no_longer_has(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    long_text = " ".join(f"paragraph {n} about glaciers and ice sheets moving slowly." for n in range(120))
    first = client.post("/v1/documents", json={"documents": [{"id": "g", "text": long_text}]}, headers=WRITE)
    chunks = first.json()["results"][0]["chunks"]
    assert chunks > 1
    second = client.post("/v1/documents", json={"documents": [{"id": "g", "text": "now about deserts"}]}, headers=WRITE)
    assert second.json()["results"][0]["chunks"] == 1
    glaciers = search(client, query="glaciers", explain=True, collapse=False).json()["results"]
    assert [hit["id"] for hit in glaciers] == ["g#0"]  # the other chunks are gone
    assert "bm25" not in glaciers[0]["explain"]["retrievers"]  # and the new text has no glaciers
    assert search(client, query="deserts").json()["results"][0]["id"] == "g#0"
    deleted = client.delete("/v1/documents/g", headers=WRITE)
    assert deleted.json() == {"id": "g", "deleted_chunks": 1, "owned": []}


def test_links_to_documents_written_earlier_resolve(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    client.post("/v1/documents", json={"documents": [{"id": "target", "text": "the target"}]}, headers=WRITE)
    client.post(
        "/v1/documents",
        json={"documents": [{"id": "source", "text": "points on", "links": ["target", "missing"]}]},
        headers=WRITE,
    )
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        stored = engine.search("notes", {"query": {"ids": {"values": ["source#0"]}}}).hits[0].source
    finally:
        engine.close()
    assert stored["links"] == ["target"]
    assert stored["metadata"]["unresolved_links"] == ["missing"]
    assert stored["source"] == "api"


def test_a_record_linking_more_documents_than_one_terms_query_takes_is_written(make_client: ClientFactory) -> None:
    """70,000 link targets, more than an index's max_terms_count (65,536): the batch was refused whole, 422."""
    client = make_client(api_keys=[KEY])
    client.post("/v1/documents", json={"documents": [{"id": "l69999", "text": "the last target"}]}, headers=WRITE)
    links = [f"l{n}" for n in range(70_000)]
    records = [{"id": "hub", "text": "links to many", "links": links}, {"id": "plain", "text": "beside it"}]
    answer = client.post("/v1/documents", json={"documents": records}, headers=WRITE)
    assert answer.status_code == 200, answer.text[:500]
    assert [result["status"] for result in answer.json()["results"]] == ["ok", "ok"]
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        stored = engine.search("notes", {"query": {"ids": {"values": ["hub#0"]}}}).hits[0].source
    finally:
        engine.close()
    assert stored["links"] == ["l69999"]  # the one written earlier, found by one part of the lookup
    assert len(stored["metadata"]["unresolved_links"]) == 69_999


def test_batch_size_and_emptiness_are_validated(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY], max_documents=2)
    too_many = client.post("/v1/documents", json={"documents": [{"id": str(n)} for n in range(3)]}, headers=WRITE)
    assert (too_many.status_code, fields(too_many)) == (422, ["body.documents"])
    empty = client.post("/v1/documents", json={"documents": []}, headers=WRITE)
    assert (empty.status_code, fields(empty)) == (422, ["body.documents"])
    not_objects = client.post("/v1/documents", json={"documents": ["a"]}, headers=WRITE)
    assert not_objects.status_code == 422


def test_delete_removes_every_chunk_and_a_missing_document_is_404(client: TestClient) -> None:
    deleted = client.delete("/v1/documents/bread", headers=WRITE)
    assert deleted.status_code == 200
    assert deleted.json() == {"id": "bread", "deleted_chunks": 1, "owned": []}
    assert all(hit["doc_id"] != "bread" for hit in search(client, query="sourdough").json()["results"])
    again = client.delete("/v1/documents/bread", headers=WRITE)
    assert (again.status_code, again.json()["error"]["kind"]) == (404, "not_found")


def test_writes_to_a_write_blocked_index_are_refused_by_name_and_land_when_sent_again(client: TestClient) -> None:
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        (current,) = engine.alias_targets("notes")
        engine.set_write_block(current, True)  # as `esbridge index reindex` does while it copies
        upsert = client.post("/v1/documents", json={"documents": [{"id": "tea", "text": "Green tea"}]}, headers=WRITE)
        assert upsert.status_code == 200
        assert (upsert.json()["written"], upsert.json()["failed"]) == (0, 1)
        (result,) = upsert.json()["results"]
        assert result["status"] == "error"
        assert "notes is write-blocked, probably because `esbridge index reindex`" in result["error"]
        assert "nothing was written" in result["error"]
        deleted = client.delete("/v1/documents/bread", headers=WRITE)
        assert (deleted.status_code, deleted.json()["error"]["kind"]) == (503, "write_blocked")
        assert "Retry-After" in deleted.headers
        assert "notes is write-blocked" in deleted.json()["error"]["message"]
        assert engine.count("notes") == len(RECORDS)

        engine.set_write_block(current, False)
    finally:
        engine.close()
    again = client.post("/v1/documents", json={"documents": [{"id": "tea", "text": "Green tea"}]}, headers=WRITE)
    assert again.json()["written"] == 1
    assert client.delete("/v1/documents/bread", headers=WRITE).status_code == 200


def test_a_document_whose_id_has_a_slash_can_be_deleted(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    records = [{"id": "Projects/Alpha", "text": "alpha plan"}, {"id": "Projects/Beta", "text": "beta plan"}]
    assert client.post("/v1/documents", json={"documents": records}, headers=WRITE).status_code == 200
    encoded = client.delete("/v1/documents/Projects%2FAlpha", headers=WRITE)
    assert (encoded.status_code, encoded.json()) == (200, {"id": "Projects/Alpha", "deleted_chunks": 1, "owned": []})
    plain = client.delete("/v1/documents/Projects/Beta", headers=WRITE)
    assert (plain.status_code, plain.json()) == (200, {"id": "Projects/Beta", "deleted_chunks": 1, "owned": []})
    gone = client.delete("/v1/documents/Projects/Beta", headers=WRITE)
    assert (gone.status_code, gone.json()["error"]["message"]) == (404, "no document 'Projects/Beta' in notes")


def test_a_search_before_the_first_write_leaves_no_stale_warning_after_it(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    assert search(client, query="solar").json()["error"]["kind"] == "index_missing"
    assert client.post("/v1/documents", json={"documents": RECORDS}, headers=WRITE).status_code == 200
    answer = search(client, query="solar")
    assert answer.status_code == 200, answer.text
    assert answer.json()["warnings"] == []


class ShortReader(HashingEmbedder):
    max_tokens = 12


def test_an_upsert_says_how_many_chunks_were_longer_than_the_model_reads(make_client: ClientFactory) -> None:
    client = make_client(embedder=ShortReader(), api_keys=[KEY])
    documents = [
        {"id": "long", "title": "", "text": " ".join(f"word{i}" for i in range(40))},
        {"id": "short", "title": "", "text": "tides and currents"},
    ]
    body = client.post("/v1/documents", json={"documents": documents}, headers=WRITE).json()
    assert (body["written"], body["failed"]) == (2, 0)
    assert body["warnings"] == [
        "1 of 2 chunk(s) hold more than the 12 tokens hashing-32 reads: their vectors stand for their beginnings "
        "only (BM25 searches their whole text)"
    ]


def test_each_document_says_what_of_it_was_read_otherwise_than_given(make_client: ClientFactory) -> None:
    """A record's own warnings (those `esbridge ingest` prints for a JSONL line) reach the client too."""
    client = make_client(api_keys=[KEY])
    documents = [
        {
            "id": "a",
            "title": "Alpha",
            "text": "tides",
            "links": [{"id": "b", "weight": 5}],
            "metadata": {"link_weights": {"b": 2}},
        },
        {"id": "b", "title": "Beta", "text": "currents"},
        {"id": "empty", "title": "", "text": ""},  # written, with no vector: nothing to embed
    ]
    body = client.post("/v1/documents", json={"documents": documents}, headers=WRITE).json()
    assert [result["status"] for result in body["results"]] == ["ok", "ok", "ok"]
    first, second, empty = (result["warnings"] for result in body["results"])
    assert len(first) == 1 and "'b'" in first[0] and "5" in first[0] and "2" in first[0]
    assert second == []
    assert empty == ["record has neither title nor text"]


def test_a_record_the_model_sees_nothing_in_is_written_without_a_vector(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    documents = [{"id": "dashes", "title": "", "text": "-- !!! --"}, {"id": "b", "title": "Beta", "text": "currents"}]
    body = client.post("/v1/documents", json={"documents": documents}, headers=WRITE).json()
    assert (body["written"], body["failed"]) == (2, 0)
    assert body["warnings"] == [
        "1 chunk(s) hold text in which hashing-32 sees nothing (its vector of them is zero, which no engine searches "
        "by cosine): indexed without a vector, for BM25 and filters only"
    ]
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        (hit,) = engine.search("notes", {"query": {"term": {"doc_id": "dashes"}}}).hits
    finally:
        engine.close()
    assert (hit.source["embedding"], hit.source.get("vector")) == ("none", None)
