from __future__ import annotations

import os
import unicodedata
from datetime import datetime, timezone
from pathlib import Path

import pytest

from esbridge.errors import EsbridgeWarning, SourceError
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Problem, Section
from tests.unit.ingest.vaults import read_documents, write_vault

UTC = timezone.utc


def one_note(tmp_path: Path, text: str, name: str = "note.md") -> Document:
    return read_documents(write_vault(tmp_path, {name: text}))[name.removesuffix(".md")]


# --- files, ids, problems -------------------------------------------------------------------------


def test_ids_are_vault_paths_and_hidden_folders_and_other_files_are_skipped(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            "Top.md": "top",
            "Folder/Sub Folder/Deep Note.md": "deep",
            "Folder/readme.MD": "upper-case extension",
            ".obsidian/workspace.md": "settings",
            ".git/HEAD.md": "git",
            "node_modules/pkg/README.md": "dependency",
            "Folder/.hidden.md": "hidden file",
            "image.png": "not a note",
            "notes.txt": "not a note",
        },
    )
    docs = read_documents(tmp_path)
    assert sorted(docs) == ["Folder/Sub Folder/Deep Note", "Folder/readme", "Top"]
    assert docs["Folder/Sub Folder/Deep Note"].path == "Folder/Sub Folder/Deep Note.md"


def test_a_linked_folder_outside_the_vault_is_read_and_links_that_would_repeat_or_loop_are_not(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"Top.md": "top", "Inner/inside.md": "inside"})
    shared = write_vault(tmp_path / "shared", {"common.md": "shared note", "deeper/more.md": "more"})
    (vault / "Shared").symlink_to(shared, target_is_directory=True)
    (shared / "deeper" / "back").symlink_to(shared, target_is_directory=True)  # a loop
    (vault / "Again").symlink_to(vault / "Inner", target_is_directory=True)  # read at Inner/ already
    (vault / "Self").symlink_to(vault, target_is_directory=True)
    (vault / "Up").symlink_to(tmp_path, target_is_directory=True)  # holds the vault: a loop too
    (vault / "Twice").symlink_to(shared, target_is_directory=True)  # the first link to it, by name, is read
    assert sorted(read_documents(vault)) == ["Inner/inside", "Shared/common", "Shared/deeper/more", "Top"]


def test_a_note_that_is_a_link_to_a_file_other_than_a_note_is_not_read(tmp_path: Path) -> None:
    # A vault from elsewhere (a shared git repository) could hold meeting.md -> ../../.aws/credentials: read, any
    # file its owner may read would go into the index, to whoever may search it.
    vault = write_vault(tmp_path / "vault", {"Top.md": "top"})
    secret = tmp_path / "home" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text("aws_secret_access_key = not-for-the-index\n", encoding="utf-8")
    elsewhere = write_vault(tmp_path / "elsewhere", {"kept.md": "a note kept elsewhere"})
    (vault / "meeting.md").symlink_to(secret)
    (vault / "kept.md").symlink_to(elsewhere / "kept.md")  # a note outside the vault, as a linked folder's are
    (vault / "Linked").symlink_to(secret.parent, target_is_directory=True)
    (secret.parent / "notes.md").symlink_to(secret)

    with pytest.warns(EsbridgeWarning) as warned:
        items = list(read_vault(vault))

    assert sorted(item.doc_id for item in items if isinstance(item, Document)) == ["Top", "kept"]
    assert not [item for item in items if isinstance(item, Problem)]
    assert sorted(str(warning.message) for warning in warned) == [
        f"Linked/notes.md: a symbolic link to {secret}, which is not a Markdown note; not read",
        f"meeting.md: a symbolic link to {secret}, which is not a Markdown note; not read",
    ]


def test_a_non_utf8_note_is_a_problem_and_the_others_are_still_read(tmp_path: Path) -> None:
    write_vault(
        tmp_path, {"good.md": "[[bad]] and [[other]]", "bad.md": b"line one\nline two \xff\xfe\n", "other.md": ""}
    )
    items = list(read_vault(tmp_path))
    problems = [item for item in items if isinstance(item, Problem)]
    docs = {item.doc_id: item for item in items if isinstance(item, Document)}
    assert len(problems) == 1
    assert problems[0].source == str(tmp_path / "bad.md")
    assert problems[0].line == 2
    assert "UTF-8" in problems[0].reason
    assert sorted(docs) == ["good", "other"]
    # the unreadable note is still a note of the vault (an ingest keeps its indexed chunks): links to it hold
    assert docs["good"].links == ("bad", "other")
    assert docs["good"].metadata["unresolved_links"] == []


def test_a_link_to_an_unreadable_note_does_not_move_to_another_note_of_that_name(tmp_path: Path) -> None:
    write_vault(tmp_path, {"a/Plan.md": b"caf\xe9\n", "b/archive/Plan.md": "old plan", "note.md": "[[Plan]]"})
    docs = {item.doc_id: item for item in read_vault(tmp_path) if isinstance(item, Document)}
    assert docs["note"].links == ("a/Plan",)


def test_a_file_name_that_is_not_utf8_is_a_problem_and_the_others_are_still_read(tmp_path: Path) -> None:
    write_vault(tmp_path, {"good.md": "good"})
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("a Latin-1 file name")
    items = list(read_vault(tmp_path))
    problems = [item for item in items if isinstance(item, Problem)]
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["good"]
    assert [(problem.source, problem.doc_id) for problem in problems] == [(f"{tmp_path}/caf\\xe9.md", "caf\\xe9")]
    assert "file name is not UTF-8" in problems[0].reason


def test_a_byte_order_mark_is_not_content(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "\ufeff---\ntitle: With BOM\n---\nText")
    assert doc.title == "With BOM"
    assert doc.warnings == ()


@pytest.mark.parametrize("name", ["Meeting notes.md", "Meeting notes.markdown", "Meeting notes.MD"])
def test_a_single_note_file_is_a_vault_of_one_note(tmp_path: Path, name: str) -> None:
    write_vault(tmp_path, {name: "# Meeting\n\nSee [[other]] and [[Meeting notes]].\n", "other.md": "not read"})
    [document] = list(read_vault(tmp_path / name))
    assert isinstance(document, Document)
    assert (document.doc_id, document.path, document.title) == ("Meeting notes", name, "Meeting")
    assert document.links == ()
    assert document.metadata["unresolved_links"] == ["other"], "other notes in the folder are not part of it"


def test_a_file_that_is_not_a_note_is_a_source_error(tmp_path: Path) -> None:
    write_vault(tmp_path, {"notes.txt": "text"})
    with pytest.raises(SourceError, match=r"notes\.txt .*not a folder.*\.md"):
        read_vault(tmp_path / "notes.txt")


def test_a_note_whose_frontmatter_explodes_is_indexed_without_it(tmp_path: Path) -> None:
    levels = ['l0: &l0 "lol"'] + [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 8)]
    doc = one_note(tmp_path, "---\ntitle: Laughs\n" + "\n".join(levels) + "\n---\n# Body\n\nStill here.\n")
    assert doc.title == "Body"
    assert doc.metadata == {"unresolved_links": []}
    assert len(doc.warnings) == 1 and "alias" in doc.warnings[0]


def test_a_missing_vault_folder_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        read_vault(tmp_path / "nowhere")


def test_documents_come_in_path_order_and_repeat_identically(tmp_path: Path) -> None:
    write_vault(tmp_path, {"b.md": "[[a]]", "a.md": "# A\ntext #t", "c/d.md": "x"})
    first = [item for item in read_vault(tmp_path) if isinstance(item, Document)]
    second = [item for item in read_vault(tmp_path) if isinstance(item, Document)]
    assert [doc.doc_id for doc in first] == ["a", "b", "c/d"]
    assert first == second


# --- frontmatter ----------------------------------------------------------------------------------


def test_frontmatter_fields(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "---\n"
        "title: Deploy guide\n"
        "tags: [ops, release/process]\n"
        "aliases: [Deploying]\n"
        "created: 2024-01-02\n"
        "modified: 2024-02-03T04:05:06+01:00\n"
        "status: draft\n"
        "type: runbook\n"
        "category: ops\n"
        "owner: ada\n"
        "---\n"
        "# Something else\n\nBody #ops #extra\n",
    )
    assert doc.title == "Deploy guide"
    assert doc.tags == ("ops", "release/process", "extra")
    assert doc.aliases == ("Deploying",)
    assert doc.created_at == datetime(2024, 1, 2, tzinfo=UTC)
    assert doc.modified_at == datetime(2024, 2, 3, 3, 5, 6, tzinfo=UTC)
    assert (doc.status, doc.entity_type, doc.category) == ("draft", "runbook", "ops")
    assert doc.metadata == {"owner": "ada", "unresolved_links": []}
    # the H1 is not the title here, so it stays in the heading path
    assert doc.sections == (Section("Body #ops #extra", ("Something else",)),)


def test_dendron_epoch_millisecond_dates(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "---\nid: 3472226a\ntitle: Links\ndesc: Create links\nupdated: 1660920582709\ncreated: 1595003088839\n---\n",
    )
    assert doc.created_at == datetime(2020, 7, 17, 16, 24, 48, 839000, tzinfo=UTC)
    assert doc.modified_at == datetime(2022, 8, 19, 14, 49, 42, 709000, tzinfo=UTC)
    assert doc.metadata == {"id": "3472226a", "desc": "Create links", "unresolved_links": []}


def test_without_a_date_in_frontmatter_modified_at_is_the_file_time(tmp_path: Path) -> None:
    write_vault(tmp_path, {"note.md": "text"})
    os.utime(tmp_path / "note.md", (1_700_000_000, 1_700_000_000))
    doc = read_documents(tmp_path)["note"]
    assert doc.modified_at == datetime.fromtimestamp(1_700_000_000, tz=UTC)
    assert doc.created_at is None


@pytest.mark.parametrize(
    ("frontmatter", "warning"),
    [
        ("title: [unclosed\ntags: x\n", "not valid YAML at line 3"),
        ("- a\n- list\n", "not a mapping"),
        ("created: yesterday\n", "'created' is not a date"),
    ],
)
def test_broken_frontmatter_is_a_warning_and_the_note_is_still_indexed(
    tmp_path: Path, frontmatter: str, warning: str
) -> None:
    doc = one_note(tmp_path, f"---\n{frontmatter}---\n# Fallback Title\n\nStill here [[note]].\n")
    assert len(doc.warnings) == 1
    assert warning in doc.warnings[0]
    assert doc.title == "Fallback Title"
    assert doc.sections == (Section("Still here note."),)


def test_unclosed_frontmatter_is_a_warning(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "---\ntitle: x\n\nno closing line\n")
    assert doc.warnings == ("frontmatter starts with '---' but has no closing '---'; read as text",)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From Frontmatter\n---\n# Heading\n", "From Frontmatter"),
        ("Intro\n\n## Second level\n\n# First H1\n\n# Second H1\n", "First H1"),
        ("## Only second level\n", "My Note"),
        ("", "My Note"),
    ],
)
def test_title_falls_back_to_first_h1_then_file_name(tmp_path: Path, text: str, title: str) -> None:
    assert one_note(tmp_path, text, name="My Note.md").title == title


# --- sections and code ----------------------------------------------------------------------------


def test_sections_follow_headings_and_keep_their_path(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "# Setup\n\nIntro text.\n\n## Install\n\n### Linux\n\nUse apt.\n\n### Mac\n\nUse brew.\n\n"
        "## Configure\n\nEdit the file.\n\n# Appendix\n\nMore.\n",
    )
    assert doc.title == "Setup"
    assert [(section.headings, section.text) for section in doc.sections] == [
        ((), "Intro text."),
        (("Install", "Linux"), "Use apt."),
        (("Install", "Mac"), "Use brew."),
        (("Configure",), "Edit the file."),
        (("Appendix",), "More."),
    ]


def test_a_heading_without_text_and_without_subsections_is_kept(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "## Empty\n\n## Full\n\ntext\n")
    assert doc.sections == (Section("", ("Empty",)), Section("text", ("Full",)))


def test_code_blocks_go_to_code_and_out_of_the_text(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "## Usage\n\nCall `read_vault` like this:\n\n```python\ndocs = read_vault(root)\n```\n\n"
        "Or indented:\n\n    make build\n\n~~~\n\n~~~\nDone.\n",
    )
    (section,) = doc.sections
    assert section.headings == ("Usage",)
    assert section.text == "Call read_vault like this:\n\nOr indented:\n\nDone."
    assert section.code == ("docs = read_vault(root)", "make build", "read_vault")


def test_code_spans_in_a_heading_belong_to_its_section(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "Intro `before()`\n\n## The `after()` call\n\ntext\n")
    assert doc.sections == (
        Section("Intro before()", (), ("before()",)),
        Section("text", ("The after() call",), ("after()",)),
    )


def test_lists_tables_quotes_and_html_become_plain_text(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "- first **item**\n- second [link](https://example.com)\n  - nested\n\n"
        "| Name | Value |\n|---|---|\n| a | `1` |\n\n"
        "> quoted\n> text\n\n"
        '<div class="x">Some <b>html</b></div>\n\n![alt text](img.png)\n',
    )
    (section,) = doc.sections
    assert section.text.split("\n\n") == [
        "first item\nsecond link\nnested",
        "Name | Value\na | 1",
        "quoted\ntext",
        "Some html",
        "alt text",
    ]


# --- tags -----------------------------------------------------------------------------------------


def test_tags_in_text_but_not_in_code_headings_urls_or_links(tmp_path: Path) -> None:
    doc = one_note(
        tmp_path,
        "---\ntags: project, Inbox\n---\n"
        "# Heading is not a tag\n\n"
        "#start of line, mid #inbox text, #nested/tag/deep and #dendron.style. End #last\n\n"
        "Not tags: `#in_code`, https://example.com/page#fragment, [[other#heading]], "
        "[x](other.md#h), a#b, #123, # spaced, &#35;entity\n\n"
        "```\n#in_fence\n```\n\n    #in_indented_block\n\n"
        "## Heading with #heading_tag\n",
    )
    assert doc.tags == ("project", "Inbox", "start", "nested/tag/deep", "dendron.style", "last", "heading_tag")


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


def test_a_date_out_of_range_in_utc_leaves_the_rest_of_the_vault_readable(tmp_path: Path) -> None:
    docs = read_documents(
        write_vault(tmp_path, {"far.md": "---\ncreated: 9999-12-31T23:59:59-05:00\n---\nfar", "near.md": "near"})
    )
    assert sorted(docs) == ["far", "near"]
    assert docs["far"].created_at is None
