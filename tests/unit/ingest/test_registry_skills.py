"""An A2A agent's skills as documents of their own, as a server's tools are: found, grouped with their agent,
and gone from the index when the agent no longer lists them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.refusals import MassDeleteRefused
from esbridge.ingest.registry import read_registry
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.support.data import REGISTRY, require
from tests.support.hashing import HashingEmbedder
from tests.unit.ingest.registry_files import write_registry


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
    assert (skill.id, skill.name) == ("a2a-registry:a2abench/skills/search", "Search")
    assert (skill.agent_id, skill.agent_name, skill.agent_path) == ("a2a-registry:a2abench", "A2ABench", "/a2abench")
    assert skill.path is None  # a skill has no path of its own: its agent's is agent_path
    assert skill.score > 0


def test_a_skill_the_agent_no_longer_lists_leaves_the_index(engine: EmbeddedEngine, tmp_path: Path) -> None:
    skills = [{"id": "book", "name": "Book", "description": "Book a flight"}, {"name": "Cancel"}]
    agent = {"id": "travel", "name": "Travel", "skills": skills}
    load(engine, write_registry(tmp_path, [agent]))
    first = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    report = load(engine, write_registry(tmp_path, [{**agent, "skills": skills[:1]}]), max_delete_share=1.0)
    kept = {hit.source["doc_id"]: hit.source for hit in engine.search("registry", {"size": 50}).hits}
    assert first == {"travel", "travel/skills/book", "travel/skills/Cancel"}  # by its A2A id, else its name
    assert set(kept) == {"travel", "travel/skills/book"} and report.deleted == 1
    book = kept["travel/skills/book"]
    assert book["entity_type"] == "skill" and book["metadata"]["agent_id"] == "travel"
    assert book["metadata"]["skill_fields"] == {"id": "book"}


SKILLS = [{"id": f"s{n}", "name": f"Skill {n}", "description": f"does thing {n}"} for n in range(4)]
AGENTS = [{"id": f"agent{n}", "name": f"Agent {n}", "skills": SKILLS} for n in range(6)]


def test_a_reingest_moves_skills_named_by_their_name_to_their_a2a_ids(engine: EmbeddedEngine, tmp_path: Path) -> None:
    # An index written when skill documents were named by the skill's name: the same skills without their ids.
    load(
        engine,
        write_registry(
            tmp_path, [{**agent, "skills": [{**skill, "id": None} for skill in SKILLS]} for agent in AGENTS]
        ),
    )
    before = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 100}).hits}
    # 24 of its 30 documents are renamed: over the share a re-ingest may delete, but none of them is gone
    report = load(engine, write_registry(tmp_path, AGENTS))
    after = {hit.source["doc_id"]: hit.source for hit in engine.search("registry", {"size": 100}).hits}
    assert "agent0/skills/Skill 2" in before and len(before) == 30
    assert set(after) == {doc for n in range(6) for doc in (f"agent{n}", *(f"agent{n}/skills/s{i}" for i in range(4)))}
    assert report.failed == [] and report.deleted == 24
    assert after["agent3/skills/s2"]["metadata"]["skill_name"] == "Skill 2"
    again = load(engine, write_registry(tmp_path, AGENTS))  # converged: nothing to write or delete
    assert (again.chunks_indexed, again.deleted) == (0, 0)


def test_skills_that_are_gone_still_count_toward_the_mass_delete_guard(engine: EmbeddedEngine, tmp_path: Path) -> None:
    load(engine, write_registry(tmp_path, AGENTS))
    with pytest.raises(MassDeleteRefused, match=r"would delete 24 of them"):
        load(engine, write_registry(tmp_path, [{**agent, "skills": []} for agent in AGENTS]))


def test_a_malformed_record_keeps_its_skills_as_well_as_itself(engine: EmbeddedEngine, tmp_path: Path) -> None:
    agent = {"id": "travel", "name": "Travel", "skills": [{"name": "Book", "description": "Book a flight"}]}
    load(engine, write_registry(tmp_path, [agent]))
    report = load(engine, write_registry(tmp_path, [{**agent, "skills": "Book"}]), max_delete_share=1.0)
    kept = {hit.source["doc_id"] for hit in engine.search("registry", {"size": 50}).hits}
    assert len(report.failed) == 1 and kept == {"travel", "travel/skills/Book"}


def test_a_matched_skill_brings_its_agent_into_agents(engine: EmbeddedEngine) -> None:
    load(engine, require(REGISTRY / "agents.jsonl"))
    hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "registry", HashingEmbedder())
    only_skills = Filters(terms={"entity_type": ["skill"]})  # so the agent itself is no candidate
    query = "search questions by keyword or tag canonical citation urls"
    request = SearchRequest(query=query, group=True, fusion="rrf", filters=only_skills)
    response = asyncio.run(hybrid.search(request))
    assert response.groups is not None and response.warnings == []
    skill = response.groups.skills[0]
    assert (skill.name, skill.agent_id) == ("Search", "a2a-registry:a2abench")
    agent = next(agent for agent in response.groups.agents if agent.id == "a2a-registry:a2abench")
    assert (agent.name, agent.path, agent.score) == ("A2ABench", "/a2abench", skill.score)
    # the best skills' agents are all listed, each with at least its best skill's score
    agents = {agent.id: agent.score for agent in response.groups.agents}
    assert all(agents[hit.agent_id or ""] >= hit.score for hit in response.groups.skills[:5])


def documents(tmp_path: Path, records: list[dict[str, Any]]) -> list[Document | Problem]:
    return list(read_registry(write_registry(tmp_path, records)))


def test_a_skills_document_is_named_by_its_a2a_id_so_names_may_repeat(tmp_path: Path) -> None:
    skills = [{"id": "book-flight", "name": "Book", "description": "Book a flight"},
              {"id": "book-hotel", "name": "Book", "description": "Book a hotel room"},
              {"name": "Cancel"}]  # fmt: skip
    agent, *read = documents(tmp_path, [{"id": "travel", "name": "Travel", "skills": skills}])
    assert isinstance(agent, Document) and agent.warnings == ()  # no renamed repeat: the ids differ
    by_id = {doc.doc_id: doc for doc in read if isinstance(doc, Document)}
    assert list(by_id) == ["travel/skills/book-flight", "travel/skills/book-hotel", "travel/skills/Cancel"]
    assert by_id["travel/skills/book-hotel"].metadata["skill_description"] == "Book a hotel room"
    assert by_id["travel/skills/book-hotel"].title == "Book"


def test_a_repeated_skill_id_is_kept_under_another_key_with_a_warning(tmp_path: Path) -> None:
    skills = [{"id": "book", "name": "Book flight"}, {"id": "book", "name": "Book hotel"},
              {"id": "book~2", "name": "X"}]  # fmt: skip
    agent, *read = documents(tmp_path, [{"id": "travel", "name": "Travel", "skills": skills}])
    ids = [doc.doc_id for doc in read if isinstance(doc, Document)]
    assert ids == ["travel/skills/book", "travel/skills/book~3", "travel/skills/book~2"]
    assert isinstance(agent, Document)
    assert agent.warnings == ("skill id 'book' is repeated with other content: the repeat is 'book~3'",)


def test_a_skill_id_with_outer_spaces_is_stripped_with_a_warning_and_a_blank_one_refused(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "travel", "name": "Travel", "skills": [{"id": " book\t", "name": "Book"}]},
        {"id": "helper", "name": "Helper", "skills": [{"id": "  ", "name": "Plan"}]},
    ]
    agent, skill, problem = documents(tmp_path, records)
    assert isinstance(agent, Document) and isinstance(skill, Document)
    assert skill.doc_id == "travel/skills/book" and skill.metadata["skill_fields"] == {"id": "book"}
    assert agent.warnings == ("skill id ' book\\t' has spaces at either end: stored as 'book'",)
    assert isinstance(problem, Problem) and (problem.line, problem.reason) == (
        2,
        "field 'skills[0].id': a skill id must not be blank, got '  '",
    )
