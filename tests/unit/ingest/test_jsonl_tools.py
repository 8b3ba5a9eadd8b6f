"""A JSONL record's tools are indexed whole: each tool's fields besides its name and description (an input
schema, annotations) are kept, once, on the record's first chunk, whatever esbridge knows of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder

TOOLS: list[Any] = [
    "search_code",
    {"name": "create_issue", "description": "Open an\nissue", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": False}, "x-owner": "team-a"},
]  # fmt: skip
RECORD = {"id": "github", "title": "GitHub", "text": " ".join(f"word{n}" for n in range(600)), "tools": TOOLS}


def test_every_field_of_a_tool_is_stored_once_on_the_first_chunk(tmp_path: Path) -> None:
    path = tmp_path / "servers.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "db")
    embedder = HashingEmbedder()
    try:
        manager = IndexManager(engine, "servers", IndexParameters(dimension=embedder.dimension))
        report = ingest(path, engine=engine, manager=manager, embedder=embedder, options=IngestOptions())
        hits = list(engine.scan("servers", {"term": {"doc_id": "github"}}, ["metadata"], sort_field="chunk_id"))
    finally:
        engine.close()
    assert report.failed == [] and len(hits) > 2
    stored = {hit.id: hit.source.get("metadata") or {} for hit in hits}
    assert stored.pop("github#0") == {
        "tool_records": [
            {"name": "search_code"},
            {"name": "create_issue", "description": "Open an\nissue", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": False}, "x-owner": "team-a"},
        ]
    }  # fmt: skip
    assert all(metadata == {} for metadata in stored.values())
