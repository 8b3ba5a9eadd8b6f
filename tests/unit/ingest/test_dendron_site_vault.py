"""The shared Dendron vault (1,012 notes) read end to end; expectations checked by reading the files."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from esbridge.ingest.chunking import approximate_token_count, chunk_document
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Problem
from tests.support.data import DENDRON_VAULT, require


@pytest.fixture(scope="module")
def items() -> list[Document | Problem]:
    return list(read_vault(require(DENDRON_VAULT)))


@pytest.fixture(scope="module")
def docs(items: list[Document | Problem]) -> dict[str, Document]:
    return {item.doc_id: item for item in items if isinstance(item, Document)}


def test_every_note_is_read_without_problems_or_warnings(items: list[Document | Problem]) -> None:
    assert [item for item in items if isinstance(item, Problem)] == []
    assert len(items) == 1012
    assert [(item.doc_id, item.warnings) for item in items if isinstance(item, Document) and item.warnings] == []


def test_label_first_links_with_vault_prefixes_and_embeds(docs: dict[str, Document]) -> None:
    # ![[dendron://dendron.dendron-site/careers.mission]], [[Dendronites|dendron://.../community.concepts#dendronites]],
    # three [[Label|dendron://.../community.events.*]] and three ![[careers.*]] embeds
    advocate = docs["careers.developer-advocate"]
    assert advocate.links == (
        "careers.mission",
        "community.concepts",
        "community.events.office-hours",
        "community.events.new-user-tuesdays",
        "community.events.greenhouse",
        "careers.what-we-offer",
        "careers.what-we-run-on",
        "careers.how-we-work",
    )
    assert advocate.metadata["unresolved_links"] == []
    assert advocate.title == "Developer Advocate"


def test_links_tags_and_dangling_targets_of_a_changelog_note(docs: dict[str, Document]) -> None:
    release = docs["changelog.release.2021-08-09"]
    assert release.links == (
        "dendron.ref.commands",
        "dendron.topic.tags",
        "changelog",
        "careers.senior-full-stack-engineer",
        "careers.head-of-growth",
        "careers.head-of-content",
        "community.discord.roles",
        "tags.role.taxonomist",  # Dendron: #role.taxonomist links to its tag note
        "tags.role.bugcatcher",
    )
    assert release.metadata["unresolved_links"] == ["rfc.18-add-note-indexes"]
    assert release.tags == ("role.taxonomist", "role.bugcatcher")  # not @mandarvaze#4457
    assert release.created_at == datetime(2021, 8, 10, 9, 35, 36, 181000, tzinfo=timezone.utc)


def test_links_inside_code_blocks_are_not_links(docs: dict[str, Document]) -> None:
    # [[people.joe-snail]], [[people.kevin-lin]], [[pro.dendron.feat.publish]] sit in ```markdown blocks
    pod = docs["dendron.topic.pod.markdown"]
    assert pod.links == ("dendron.topic.note-reference",)
    assert pod.metadata["unresolved_links"] == []
    assert any("[[people.kevin-lin]]" in code for section in pod.sections for code in section.code)


def test_tutorial_links(docs: dict[str, Document]) -> None:
    assert docs["dendron.tutorial.taking-notes"].links == (
        "dendron.topic.lookup",
        "asset.preview",
        "dendron.topic.markdown",
        "dendron.topic.publish",
        "dendron.topic.frontmatter",
        "dendron.topic.hierarchies",
        "dendron.concepts",
        "dendron.faq",
        "dendron.tutorial.linking-notes",
        "dendron.topic.lookup.find",
        "dendron.topic.search",
    )
    assert docs["tutorial.main.taking-notes"].metadata["unresolved_links"] == ["tutorial.linking-notes"]


def test_link_counts_are_plausible(docs: dict[str, Document]) -> None:
    resolved = sum(len(doc.links) for doc in docs.values())
    unresolved = sum(len(doc.metadata["unresolved_links"]) for doc in docs.values())
    assert 2000 < resolved < 3500
    assert 50 < unresolved < resolved // 10
    assert sum(1 for doc in docs.values() if doc.links) > len(docs) * 0.4
    assert all(target in docs and target != doc.doc_id for doc in docs.values() for target in doc.links)


def test_dendron_epoch_dates_are_read(docs: dict[str, Document]) -> None:
    spans = [(doc.created_at, doc.modified_at) for doc in docs.values() if doc.created_at and doc.modified_at]
    assert len(spans) > 1000
    since, until = datetime(2019, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 1, tzinfo=timezone.utc)
    assert all(since < created < until and since < modified < until for created, modified in spans)


def test_the_vault_chunks_within_limits(docs: dict[str, Document]) -> None:
    chunks = [
        chunk
        for doc in docs.values()
        for chunk in chunk_document(doc, max_tokens=256, overlap_tokens=32, min_tokens=32)
    ]
    assert len(chunks) > len(docs)
    assert len({chunk.chunk_id for chunk in chunks}) == len(chunks)
    assert {chunk.doc_id for chunk in chunks} == set(docs)
    assert all(approximate_token_count(chunk.body) <= 256 for chunk in chunks)
