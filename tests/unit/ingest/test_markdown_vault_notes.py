"""What a Markdown note holds once read: frontmatter fields and dates, its title, sections and code, and tags."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from esbridge.ingest.chunking import chunk_document
from esbridge.ingest.documents import index_document
from esbridge.ingest.model import Section
from tests.unit.ingest.vaults import one_note, read_documents, write_vault

UTC = timezone.utc


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


@pytest.mark.parametrize(
    "frontmatter",
    [
        "title: Tidal notes\ntags: [ocean]\n\tcreated: 2024-05-01\n",  # a tab indents the last key
        "title: *Tidal*\ntags: ocean\n",  # an alias, not emphasis
        "title: Tidal notes\na: b: c\n",
        "- Tidal notes\n- ocean\n",  # a list, not a mapping
    ],
)
def test_frontmatter_that_cannot_be_read_stays_searchable_as_its_text(tmp_path: Path, frontmatter: str) -> None:
    doc = one_note(tmp_path, f"---\n{frontmatter}---\nBody [[note]].\n")
    [warning] = doc.warnings
    assert warning.startswith("frontmatter is not ")
    assert warning.endswith("; its text is kept in metadata 'frontmatter_text'")
    assert doc.metadata == {"frontmatter_text": frontmatter.rstrip("\n"), "unresolved_links": []}
    document = index_document(
        chunk_document(doc, max_tokens=200, overlap_tokens=0, min_tokens=0)[0], source="v", vector=None
    )
    assert "Tidal" in document["metadata_text"]


def test_a_notes_own_unresolved_links_are_kept_under_another_key_with_a_warning(tmp_path: Path) -> None:
    doc = one_note(tmp_path, "---\nunresolved_links: [mine]\n---\nSee [[gone]].\n")
    assert doc.metadata == {"given_unresolved_links": ["mine"], "unresolved_links": ["gone"]}
    assert doc.warnings == (
        "metadata key 'unresolved_links' holds the links that name no note, which esbridge computes; the value "
        "given is kept as 'given_unresolved_links'",
    )


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


def test_a_date_out_of_range_in_utc_leaves_the_rest_of_the_vault_readable(tmp_path: Path) -> None:
    docs = read_documents(
        write_vault(tmp_path, {"far.md": "---\ncreated: 9999-12-31T23:59:59-05:00\n---\nfar", "near.md": "near"})
    )
    assert sorted(docs) == ["far", "near"]
    assert docs["far"].created_at is None


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


def test_a_yaml_boolean_that_becomes_text_is_the_word_written_and_stays_a_boolean_in_metadata(tmp_path: Path) -> None:
    # Tags, status and title read Python's text of the boolean: `tags: [true]` was the tag "True".
    doc = one_note(
        tmp_path,
        "---\ntitle: false\ntags: [true, yes, !!bool on, TRUE]\naliases: [!!bool no]\nstatus: TRUE\n"
        "type: !!bool yes\ndraft: true\nreviewed: !!bool off\n---\nBody.\n",
    )
    assert doc.title == "false"
    assert doc.tags == ("true", "yes", "on")
    assert doc.aliases == ("no",)
    assert (doc.status, doc.entity_type) == ("TRUE", "yes")
    assert doc.metadata["draft"] is True and doc.metadata["reviewed"] is False
    indexed = index_document(
        chunk_document(doc, max_tokens=200, overlap_tokens=0, min_tokens=0)[0], source="v", vector=None
    )
    assert (indexed["tags"], indexed["status"], indexed["entity_type"]) == (["true", "yes", "on"], "TRUE", "yes")
    assert indexed["metadata"]["draft"] is True
    assert "draft: true" in indexed["metadata_text"].splitlines()
