"""An A2A agent's skills as documents of their own, as a server's tools are: found, grouped with their agent,
and gone from the index when the agent no longer lists them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import REGISTRY, require
from tests.support.hashing import HashingEmbedder


def write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "registry.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def engine(tmp_path: Path) -> Any:
    engine = EmbeddedEngine(tmp_path / "db")
    yield engine
    engine.close()


def load(engine: EmbeddedEngine, path: Path, **options: Any) -> Any:
    embedder = HashingEmbedder()
    manager = IndexManager(engine, "registry", IndexParameters(dimension=embedder.dimension))
    report = ingest(path, engine=engine, manager=manager, embedder=embedder,
                    options=IngestOptions(source_format="registry", source="registry", **options))  # fmt: skip
    engine.refresh("registry")
    return report


def test_a_query_for_what_an_agents_skill_does_lists_the_skill_with_its_agent(engine: EmbeddedEngine) -> None:
    agents = require(REGISTRY / "agents.jsonl")
    load(engine, agents)
    hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", HashingEmbedder())
    # The skill "Search" of A2ABench: "Search questions by keyword or tag and return canonical citation URLs."
    query = "search questions by keyword or tag canonical citation urls"
    response = asyncio.run(hybrid.search(SearchRequest(query=query, group=True, fusion="rrf")))
    assert response.groups is not None
    skill = response.groups.skills[0]
    assert (skill.id, skill.name) == ("a2a-registry:a2abench/skills/Search", "Search")
    assert (skill.agent_id, skill.agent_name, skill.path) == ("a2a-registry:a2abench", "A2ABench", "/a2abench")
    assert skill.score > 0


def test_a_skill_the_agent_no_longer_lists_leaves_the_index(engine: EmbeddedEngine, tmp_path: Path) -> None:
    skills = [{"id": "book", "name": "Book", "description": "Book a flight"}, {"name": "Cancel"}]
    agent = {"id": "travel", "name": "Travel", "skills": skills}
    load(engine, write(tmp_path, [agent]))
    first = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    report = load(engine, write(tmp_path, [{**agent, "skills": skills[:1]}]), max_delete_share=1.0)
    kept = {hit.source["doc_id"]: hit.source for hit in engine.search("registry", {"size": 50}).hits}
    assert first == {"travel", "travel/skills/Book", "travel/skills/Cancel"}
    assert set(kept) == {"travel", "travel/skills/Book"} and report.deleted == 1
    book = kept["travel/skills/Book"]
    assert book["entity_type"] == "skill" and book["metadata"]["agent_id"] == "travel"
    assert book["metadata"]["skill_fields"] == {"id": "book"}


def test_a_malformed_record_keeps_its_skills_as_well_as_itself(engine: EmbeddedEngine, tmp_path: Path) -> None:
    agent = {"id": "travel", "name": "Travel", "skills": [{"name": "Book", "description": "Book a flight"}]}
    load(engine, write(tmp_path, [agent]))
    report = load(engine, write(tmp_path, [{**agent, "skills": "Book"}]), max_delete_share=1.0)
    kept = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    assert len(report.failed) == 1 and kept == {"travel", "travel/skills/Book"}
