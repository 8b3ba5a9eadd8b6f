"""``POST /v1/documents`` with ``"format": "registry"`` reads each record as ``esbridge ingest --format registry``
reads a line: a server's tools become documents of their own, linked to it, on the embedded engine."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.registry import record_documents
from esbridge.ingest.registry_records import RegistryRecord
from tests.support.data import REGISTRY, require
from tests.unit.service.conftest import KEY, ClientFactory, fields

WRITE = {"X-API-Key": KEY}
SERVERS = REGISTRY / "servers.jsonl"
SERVER_ID = "gateway:atlassian"
TOOL_ID = f"{SERVER_ID}/tools/jira_get_user_profile"


def server_record() -> dict[str, Any]:
    """The Atlassian MCP server as the shared registry file gives it (tools with input schemas and other fields)."""
    with require(SERVERS).open(encoding="utf-8") as lines:
        return next(record for line in lines if (record := json.loads(line))["id"] == SERVER_ID)


def stored_documents() -> dict[str, dict[str, Any]]:
    """The first chunk of every document in the index ``notes``: doc id -> its stored fields."""
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        fields = ["doc_id", "entity_type", "links", "metadata"]
        hits = engine.scan("notes", {"term": {"chunk_index": 0}}, fields, sort_field="chunk_id")
        return {str(hit.source["doc_id"]): dict(hit.source) for hit in hits}
    finally:
        engine.close()


def upsert(client: TestClient, record: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/v1/documents", json={"documents": [record], "format": "registry"}, headers=WRITE)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_a_registry_record_is_split_into_its_server_and_one_document_per_tool_found_with_its_server(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    record = server_record()
    body = upsert(client, record)
    assert (body["written"], body["failed"]) == (1, 0)
    assert body["results"][0]["id"] == SERVER_ID
    made = record_documents(RegistryRecord.model_validate(record))  # what esbridge ingest makes of the line
    stored = stored_documents()
    assert sorted(stored) == sorted(document.doc_id for document in made)
    assert len(stored) == 1 + len(record["tools"])
    tool = stored[TOOL_ID]
    assert (tool["entity_type"], tool["links"]) == ("tool", [SERVER_ID])
    assert tool["metadata"]["server_id"] == SERVER_ID
    assert tool["metadata"]["input_schema"] == record["tools"][0]["inputSchema"]
    assert stored[SERVER_ID]["entity_type"] == "mcp_server"

    answer = client.post("/v1/search", json={"query": "jira user profile", "group": True})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["results"][0]["doc_id"] == TOOL_ID
    assert found["results"][0]["entity_type"] == "tool"
    server = next(group for group in found["groups"]["servers"] if group["id"] == SERVER_ID)
    assert "jira_get_user_profile" in [match["tool_name"] for match in server["matching_tools"]]


def test_upserting_the_record_again_deletes_the_tools_it_no_longer_lists(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    record = server_record()
    upsert(client, record)
    kept = record["tools"][:2]
    body = upsert(client, {**record, "tools": kept})
    assert (body["written"], body["failed"]) == (1, 0)
    assert sorted(stored_documents()) == sorted([SERVER_ID, *(f"{SERVER_ID}/tools/{tool['name']}" for tool in kept)])
    upsert(client, {**record, "tools": []})
    assert sorted(stored_documents()) == [SERVER_ID]
    assert client.delete(f"/v1/documents/{SERVER_ID}", headers=WRITE).json()["deleted_chunks"] >= 1
    assert stored_documents() == {}


def test_a_registry_record_that_fails_keeps_what_the_index_holds_and_others_are_written(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    record = server_record()
    upsert(client, record)
    before = sorted(stored_documents())
    broken = {**record, "tools": [{"name": " ", "description": "blank name"}]}
    other = {"id": "other", "name": "Other", "tools": ["ping"]}
    answer = client.post("/v1/documents", json={"documents": [broken, other], "format": "registry"}, headers=WRITE)
    body = answer.json()
    assert (body["written"], body["failed"]) == (1, 1), body
    refused = body["results"][0]
    assert (refused["id"], refused["status"]) == (SERVER_ID, "error")
    assert "a tool name must not be blank" in refused["error"]
    assert sorted(stored_documents()) == sorted([*before, "other", "other/tools/ping"])


def test_without_the_format_a_record_is_read_as_a_jsonl_line_and_its_tools_are_metadata(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    answer = client.post("/v1/documents", json={"documents": [server_record()]}, headers=WRITE)
    assert answer.json()["written"] == 1, answer.text
    assert sorted(stored_documents()) == [SERVER_ID]
    unknown = client.post("/v1/documents", json={"documents": [{"id": "x"}], "format": "csv"}, headers=WRITE)
    assert unknown.status_code == 422, unknown.text
    assert "body.format" in [item["field"] for item in unknown.json()["error"]["fields"]]


def test_a_record_whose_id_another_record_of_the_batch_makes_as_a_tool_is_refused_and_warnings_name_the_tool(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY])
    server = {"id": "jira", "name": "Jira", "tools": [{"name": " open_issue", "description": "Opens\x00an issue"}]}
    clash = {"id": "jira/tools/open_issue", "name": "Clash"}
    answer = client.post("/v1/documents", json={"documents": [server, clash], "format": "registry"}, headers=WRITE)
    body = answer.json()
    assert (body["written"], body["failed"]) == (1, 1), body
    written, refused = body["results"]
    warnings = written["warnings"]
    assert "tool name ' open_issue' has spaces at either end: stored as 'open_issue'" in warnings
    assert any(w.startswith("document 'jira/tools/open_issue': 1 control character(s)") for w in warnings), warnings
    assert refused["error"] == "duplicate id 'jira/tools/open_issue' in this batch (first at position 0)"
    assert sorted(stored_documents()) == ["jira", "jira/tools/open_issue"]
    assert stored_documents()["jira/tools/open_issue"]["entity_type"] == "tool"


def test_deleting_a_registry_record_deletes_its_tools_with_it(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    record = server_record()
    upsert(client, record)
    plain = {"id": f"{SERVER_ID}-notes", "text": "notes about the server", "links": [SERVER_ID]}
    answer = client.post("/v1/documents", json={"documents": [plain]}, headers=WRITE)
    assert answer.status_code == 200, answer.text
    tools = sorted(doc_id for doc_id in stored_documents() if doc_id.startswith(f"{SERVER_ID}/tools/"))
    assert len(tools) == len(record["tools"])

    answer = client.delete(f"/v1/documents/{SERVER_ID}", headers=WRITE)
    assert answer.status_code == 200, answer.text
    assert answer.json()["owned"] == tools
    assert answer.json()["deleted_chunks"] >= 1 + len(tools)
    assert sorted(stored_documents()) == [plain["id"]]  # a document that only links to it stays

    answer = client.delete(f"/v1/documents/{plain['id']}", headers=WRITE)
    assert (answer.status_code, answer.json()["owned"]) == (200, [])


def servers(count: int, tools: int) -> list[dict[str, Any]]:
    return [{"id": f"s{n}", "name": f"Server {n}", "tools": [f"tool{t}" for t in range(tools)]} for n in range(count)]


def test_more_registry_records_than_service_max_documents_are_counted_as_records_in_the_refusal(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY], max_documents=2)
    seed = client.post("/v1/documents", json={"documents": [{"id": "seed", "text": "kept"}]}, headers=WRITE)
    assert seed.json()["written"] == 1, seed.text
    many = client.post("/v1/documents", json={"documents": servers(3, 1), "format": "registry"}, headers=WRITE)
    assert (many.status_code, fields(many)) == (422, ["body.documents"]), many.text
    assert many.json()["error"]["message"] == (
        "body.documents: the 3 record(s) make at least 3 documents (a registry record's tools and skills count as "
        "documents of their own); at most 2 per request (service.max_documents): nothing was written; send them "
        "in several requests"
    )
    assert sorted(stored_documents()) == ["seed"]


def test_service_max_documents_bounds_the_documents_registry_records_make_and_refuses_more_writing_nothing(
    make_client: ClientFactory,
) -> None:
    client = make_client(api_keys=[KEY], max_documents=10)
    seed = client.post("/v1/documents", json={"documents": [{"id": "seed", "text": "kept"}]}, headers=WRITE)
    assert seed.json()["written"] == 1, seed.text
    many = client.post("/v1/documents", json={"documents": servers(2, 20), "format": "registry"}, headers=WRITE)
    assert (many.status_code, fields(many)) == (422, ["body.documents"]), many.text
    message = many.json()["error"]["message"]
    assert "the first 1 of the 2 record(s) already make 21 documents" in message  # the second one was not read
    assert "at most 10 per request (service.max_documents): nothing was written" in message
    last = client.post("/v1/documents", json={"documents": servers(3, 4), "format": "registry"}, headers=WRITE)
    assert "the 3 record(s) make 15 documents" in last.json()["error"]["message"], last.text
    assert sorted(stored_documents()) == ["seed"]
    bounded = client.post("/v1/documents", json={"documents": servers(2, 4), "format": "registry"}, headers=WRITE)
    assert bounded.json()["written"] == 2, bounded.text
    assert len(stored_documents()) == 1 + 10


def test_a_delete_removes_every_chunk_of_a_long_tool_with_one_read_of_what_the_record_owns(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(api_keys=[KEY], refresh="false")
    long_tool = {"name": "long", "description": " ".join(f"step{n} of the long procedure." for n in range(1500))}
    record = {"id": "srv", "name": "Server", "tools": [long_tool, *(f"tool{n}" for n in range(20))]}
    assert upsert(client, record)["written"] == 1
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        engine.refresh("notes")
        chunks = list(engine.scan("notes", {"match_all": {}}, ["doc_id"], sort_field="chunk_id"))
    finally:
        engine.close()
    assert sum(1 for hit in chunks if hit.source["doc_id"] == "srv/tools/long") > 1
    reads: list[object] = []
    scan = EmbeddedEngine.scan

    def counted(self: EmbeddedEngine, *args: Any, **kwargs: Any) -> Any:
        reads.append(args[1])  # the query
        return scan(self, *args, **kwargs)

    monkeypatch.setattr(EmbeddedEngine, "scan", counted)
    answer = client.delete("/v1/documents/srv", headers=WRITE)
    assert answer.status_code == 200, answer.text
    assert answer.json()["deleted_chunks"] == len(chunks)
    assert len(answer.json()["owned"]) == 21
    assert len(reads) == 2  # the record's own chunks, then its tools' chunks by their link to it
    assert stored_documents() == {}
