"""Links between the notes of a Markdown vault, Obsidian style (target first) and Dendron style (label first)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document
from esbridge.ingest.run import ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.unit.ingest.vaults import read_documents, write_vault

# --- links, Obsidian style ------------------------------------------------------------------------


OBSIDIAN_VAULT: dict[str, str | bytes] = {
    "Home.md": (
        "Links: [[Projects/Alpha|the alpha project]], [[beta#Goals]], ![[diagram]], [[BETA]], "
        "[[alpha]], [[Ghost note]], [[Home]], [[#Local heading]], ![[picture.png]], "
        "[md](notes/gamma.md), [up](notes/sub/../gamma.md#part), [web](https://example.com/x.md), "
        "[missing](nowhere.md), [image](assets/pic.png)\n\n"
        "```\n[[in-code]]\n```\n"
    ),
    "Projects/Alpha.md": "Back to [[Home]] and [sibling](../notes/gamma.md) and [[delta]].",
    "archive/2020/alpha.md": "An older alpha; [[folder/alpha]] style [[2020/alpha]].",
    "beta.md": "[[Alpha]]",
    "diagram.md": "a diagram",
    "notes/gamma.md": "[[./delta]] [[../beta]]",
    "notes/delta.md": "[[gamma.md]]",
    "other/delta.md": "another delta",
}


@pytest.fixture
def obsidian_docs(tmp_path: Path) -> dict[str, Document]:
    return read_documents(write_vault(tmp_path, OBSIDIAN_VAULT))


def test_obsidian_wikilinks_embeds_and_markdown_links(obsidian_docs: dict[str, Document]) -> None:
    home = obsidian_docs["Home"]
    assert home.links == ("Projects/Alpha", "beta", "diagram", "notes/gamma")
    assert home.metadata["unresolved_links"] == ["Ghost note", "nowhere"]


def test_labels_replace_links_in_the_text(obsidian_docs: dict[str, Document]) -> None:
    text = obsidian_docs["Home"].sections[0].text
    assert text.startswith("Links: the alpha project, beta Goals, diagram, BETA, alpha, Ghost note,")


def test_shortest_path_same_folder_and_path_qualified_resolution(obsidian_docs: dict[str, Document]) -> None:
    assert obsidian_docs["beta"].links == ("Projects/Alpha",)  # case-insensitive, shortest path
    assert obsidian_docs["Projects/Alpha"].links == ("Home", "notes/gamma", "notes/delta")
    assert obsidian_docs["archive/2020/alpha"].links == ()  # [[2020/alpha]] names itself
    assert obsidian_docs["archive/2020/alpha"].metadata["unresolved_links"] == ["folder/alpha"]
    assert obsidian_docs["notes/gamma"].links == ("notes/delta", "beta")  # same folder wins over other/delta
    assert obsidian_docs["notes/delta"].links == ("notes/gamma",)


def test_label_first_links_still_resolve_in_an_obsidian_vault(tmp_path: Path) -> None:
    docs = read_documents(write_vault(tmp_path, {"a.md": "[[see this|b]] [[b|a label]]", "b.md": ""}))
    assert docs["a"].links == ("b",)
    assert docs["a"].metadata["unresolved_links"] == []


def test_a_link_with_an_empty_label_reads_as_its_target(tmp_path: Path) -> None:
    vault = write_vault(tmp_path, {"a.md": "See [[beta|]] and [[gamma#Goals|]] and [[ghost|]].", "beta.md": ""})
    docs = read_documents(vault)
    assert docs["a"].sections[0].text == "See beta and gamma Goals and ghost."
    assert docs["a"].links == ("beta",)
    assert docs["a"].metadata["unresolved_links"] == ["gamma", "ghost"]


def test_missing_targets_are_deduplicated_as_they_are_resolved(tmp_path: Path) -> None:
    """Resolution ignores case and Unicode normalization, so the missing targets do too: first spelling kept."""
    decomposed = unicodedata.normalize("NFD", "Café")
    text = f"[[Beta]] [[beta]] [[BETA#h]] [beta](beta.md) [[Café]] [[{decomposed}]] [[café]] [[Gamma]] [[gamma|g]]"
    docs = read_documents(write_vault(tmp_path, {"a.md": text}))
    assert docs["a"].metadata["unresolved_links"] == ["Beta", "Café", "Gamma"]


def test_missing_targets_are_kept_in_the_form_they_are_resolved_in_so_a_later_note_resolves_them_all(
    tmp_path: Path,
) -> None:
    spellings = "[[./beta]] [[beta/]] [[Beta.md#Intro]] [b](./beta.md) [c](BETA.md#h) [[x/../beta|x]] [[notes/../beta]]"
    text = f"{spellings} [[/beta]] [[//beta]] [[../beta]] [[./gone/]] [[gone]]"
    vault = write_vault(tmp_path / "vault", {"notes/alpha.md": text})
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        manager = IndexManager(engine, "notes", IndexParameters(dimension=4))
        first = ingest(vault, engine=engine, manager=manager, embedder=None)
        assert first.failed == []
        before = stored_links(engine)
        assert before["unresolved"] == ["beta", "/beta", "../beta", "gone"]  # /beta: at the vault root only
        # The text a reader sees keeps what the note says.
        assert before["body"] == "./beta beta/ Beta.md Intro b c x notes/../beta /beta //beta ../beta ./gone/ gone"

        write_vault(vault, {"notes/beta.md": "# Beta\n\nthe note at last"})
        second = ingest(vault, engine=engine, manager=manager, embedder=None)
        assert second.failed == []
        after = stored_links(engine)
        assert (after["links"], after["unresolved"]) == (["notes/beta"], ["/beta", "../beta", "gone"])
    finally:
        engine.close()


def stored_links(engine: EmbeddedEngine) -> dict[str, Any]:
    (hit,) = engine.search("notes", {"query": {"term": {"doc_id": "notes/alpha"}}}).hits
    metadata = hit.source["metadata"]
    return {"links": hit.source["links"], "unresolved": metadata["unresolved_links"], "body": hit.source["body"]}


def test_links_reach_a_note_whose_file_name_is_decomposed_unicode(tmp_path: Path) -> None:
    # macOS writes file names decomposed (NFD); the links typed in the notes are composed (NFC).
    decomposed = unicodedata.normalize("NFD", "Café")
    vault = write_vault(tmp_path, {f"{decomposed}.md": "the cafe", "a.md": "[[Café]] and [menu](caf%C3%A9.md)"})
    docs = read_documents(vault)
    assert docs["a"].links == (decomposed,)
    assert docs["a"].metadata["unresolved_links"] == []


def test_a_wikilink_in_a_table_uses_the_escaped_pipe(tmp_path: Path) -> None:
    docs = read_documents(write_vault(tmp_path, {"a.md": "| Link |\n|---|\n| [[b\\|the label]] |\n", "b.md": ""}))
    assert docs["a"].links == ("b",)
    assert docs["a"].sections[0].text == "Link\nthe label"


def test_wikilinks_in_frontmatter_values_are_links_as_obsidian_counts_them(tmp_path: Path) -> None:
    child = (
        '---\nup: "[[Parent]]"\nrelated: ["[[a|Alias A]]", "[[missing]]", plain]\ncover: "[[pic.png]]"\n'
        'nested: {x: "see [[a]] and [[Parent#h]]"}\n---\nBody links [[b]].\n'
    )
    docs = read_documents(write_vault(tmp_path, {"child.md": child, "Parent.md": "", "a.md": "", "b.md": ""}))
    assert docs["child"].links == ("Parent", "a", "b")
    assert docs["child"].metadata["unresolved_links"] == ["missing"]
    assert docs["child"].metadata["up"] == "[[Parent]]"  # the value stays as written


# --- links, Dendron style -------------------------------------------------------------------------


def dendron_note(title: str, body: str = "", tags: str = "") -> str:
    tag_lines = f"tags: {tags}\n" if tags else ""
    frontmatter = f"id: {title.lower()}\ntitle: {title}\ndesc: ''\nupdated: 1636510026672\ncreated: 1616983302480\n"
    return f"---\n{frontmatter}{tag_lines}---\n{body}"


DENDRON_VAULT: dict[str, str | bytes] = {
    "root.md": dendron_note("Root", "[[dendron.topic]]"),
    "dendron.topic.md": dendron_note(
        "Topic",
        "See [[Links|dendron.topic.links]], [[the hierarchy|dendron://my-vault/dendron.topic.links#summary]], "
        "![[dendron.topic.links#summary,1:#*]], [[Gone|dendron.topic.gone]], [[dendron.topic.missing]], "
        "[[Docs|https://example.com]] #feature.links #todo\n",
        tags="[stage.seed]",
    ),
    "dendron.topic.links.md": dendron_note("Links", "[[Topic|dendron.topic]] [[dendron.topic.links]]"),
    "tags.feature.links.md": dendron_note("Links feature"),
    "tags.stage.seed.md": dendron_note("Seed"),
}


def test_dendron_links_are_label_first(tmp_path: Path) -> None:
    docs = read_documents(write_vault(tmp_path, DENDRON_VAULT))
    topic = docs["dendron.topic"]
    assert topic.links == ("dendron.topic.links", "tags.stage.seed", "tags.feature.links")
    assert topic.metadata["unresolved_links"] == ["dendron.topic.gone", "dendron.topic.missing"]
    assert topic.tags == ("stage.seed", "feature.links", "todo")
    assert topic.sections[0].text.startswith("See Links, the hierarchy, dendron.topic.links summary,1:#*, Gone,")
    assert docs["dendron.topic.links"].links == ("dendron.topic",)  # no self-link
    assert docs["root"].links == ("dendron.topic",)


def test_a_dendron_workspace_file_decides_without_frontmatter(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "[[Label|b.c]] [[b.c|Label]]", "b.c.md": "", "Label.md": ""})
    assert read_documents(vault)["a"].links == ("Label", "b.c")  # Obsidian: target first
    (tmp_path / "dendron.yml").write_text("version: 5\n")
    assert read_documents(vault)["a"].links == ("b.c", "Label")  # Dendron: label first


def test_the_convention_can_be_forced(tmp_path: Path) -> None:
    write_vault(tmp_path, {"a.md": "[[Label|b]]", "b.md": "", "Label.md": ""})
    (doc,) = (
        item for item in read_vault(tmp_path, convention="dendron") if isinstance(item, Document) and item.doc_id == "a"
    )
    assert doc.links == ("b",)
