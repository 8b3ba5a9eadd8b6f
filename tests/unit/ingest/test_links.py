from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from esbridge.ingest.links import (
    LinkConvention,
    NoteIndex,
    Wikilink,
    clean_target,
    detect_convention,
    markdown_link_target,
    parse_wikilink,
    wikilink_label,
    wikilink_readings,
)

INDEX = NoteIndex(
    ["Projects/Alpha", "archive/old/alpha", "b/deep/alpha", "b/Guide", "Guide", "notes/setup", "x/y/setup"]
)


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        ("alpha", "elsewhere", "Projects/Alpha"),  # shortest path: fewest folders, then fewest characters
        ("ALPHA", "elsewhere", "Projects/Alpha"),  # case-insensitive
        ("alpha", "b/deep/other", "b/deep/alpha"),  # the linking note's own folder first
        ("old/alpha", "elsewhere", "archive/old/alpha"),  # a path suffix picks exactly
        ("archive/old/alpha", "elsewhere", "archive/old/alpha"),
        ("guide", "b/x", "b/Guide"),
        ("guide", "b/deep/y", "Guide"),
        ("../Guide", "b/deep/y", "b/Guide"),  # relative to the linking note
        ("/b/guide", "elsewhere", "b/Guide"),  # vault-absolute
        ("/alpha", "elsewhere", None),
        ("setup", "elsewhere", "notes/setup"),
        ("y/setup", "elsewhere", "x/y/setup"),
        ("missing", "elsewhere", None),
        ("../../outside", "b/deep/y", None),
        ("", "elsewhere", None),
    ],
)
def test_resolution_follows_obsidian(target: str, source: str, expected: str | None) -> None:
    assert INDEX.resolve(target, source) == expected


def test_a_note_spelled_exactly_as_the_link_wins_over_one_that_differs_only_in_case_or_normalization() -> None:
    composed, decomposed = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    index = NoteIndex(["Note", "note", f"d/{composed}", f"d/{decomposed}", "x/Setup", "x/setup"])
    assert index.resolve("note", "elsewhere") == "note"
    assert index.resolve("Note", "elsewhere") == "Note"
    assert index.resolve("NOTE", "elsewhere") == "Note"  # neither spelling: the first in path order
    assert index.resolve(f"d/{decomposed}", "elsewhere") == f"d/{decomposed}"
    assert index.resolve(composed, "elsewhere") == f"d/{composed}"
    assert index.resolve(decomposed, "elsewhere") == f"d/{decomposed}"
    assert index.resolve("setup", "elsewhere") == "x/setup"  # by the end of its path
    assert index.resolve("Setup", "x/other") == "x/Setup"  # from its own folder


def test_index_membership_ignores_case() -> None:
    assert "projects/alpha" in INDEX
    assert "projects/beta" not in INDEX


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("note", "note"),
        (" note#Some heading ", "note"),
        ("note.md", "note"),
        ("folder/Note.MD#^block", "folder/Note"),
        ("dendron://dendron.dendron-site/dendron.topic.links#summary,1:#*", "dendron.topic.links"),
        ("#heading-in-this-note", None),
        ("https://example.com/page#x", None),
        ("mailto:someone@example.com", None),
    ],
)
def test_clean_target(raw: str, expected: str | None) -> None:
    assert clean_target(raw) == expected


def test_wikilink_parts_and_table_escaped_pipe() -> None:
    assert parse_wikilink(" a | b ") == Wikilink("a", "b")
    assert parse_wikilink("a\\|b", embed=True) == Wikilink("a", "b", embed=True)
    assert parse_wikilink("a") == Wikilink("a", None)


def test_pipe_is_read_per_convention() -> None:
    link = parse_wikilink("label|dendron://v/target#h")
    assert wikilink_readings(link, "dendron") == ("target", "label")
    assert wikilink_readings(link, "obsidian") == ("label", "target")
    assert wikilink_label(link, "dendron") == "label"
    assert wikilink_label(parse_wikilink("target|label"), "obsidian") == "label"
    assert wikilink_label(parse_wikilink("dendron://v/target#heading"), "dendron") == "target heading"


@pytest.mark.parametrize(
    ("inner", "convention", "expected"),
    [
        ("target|", "obsidian", "target"),
        ("target#heading|", "obsidian", "target heading"),
        ("|target", "dendron", "target"),
        ("|dendron://v/target#h", "dendron", "target h"),
        ("|", "obsidian", ""),
    ],
)
def test_an_empty_label_shows_the_target(inner: str, convention: LinkConvention, expected: str) -> None:
    assert wikilink_label(parse_wikilink(inner), convention) == expected


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("other.md", ("other", True)),
        ("../x/other.md#h", ("../x/other", True)),
        ("my%20note.md", ("my note", True)),
        ("people.kevin-lin", ("people.kevin-lin", False)),
        ("/assets/image.png", ("/assets/image.png", False)),
        ("https://example.com/a.md", None),
        ("//example.com/a.md", None),
        ("#local-heading", None),
        ("mailto:a@example.com", None),
        ("command:dendron.initWS", None),
    ],
)
def test_markdown_link_targets(href: str, expected: tuple[str, bool] | None) -> None:
    assert markdown_link_target(href) == expected


def test_convention_from_workspace_file(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    assert detect_convention(vault, []) == "obsidian"
    (tmp_path / "dendron.yml").write_text("version: 5\n")
    assert detect_convention(vault, []) == "dendron"


def test_convention_from_dendron_frontmatter(tmp_path: Path) -> None:
    dendron = {"id": "x1", "updated": 1636510026672, "created": 1616983302480}
    obsidian = {"tags": ["a"], "updated": "2024-01-01"}
    assert detect_convention(tmp_path, [dendron, dendron, obsidian]) == "dendron"
    assert detect_convention(tmp_path, [dendron, obsidian, {}]) == "obsidian"


def test_resolution_ignores_unicode_normalization() -> None:
    # A note saved on macOS has a decomposed (NFD) file name; the link typed in another note is composed (NFC).
    decomposed = unicodedata.normalize("NFD", "Notes/Café crème")
    index = NoteIndex([decomposed])
    assert index.resolve("café crème", "elsewhere") == decomposed
    assert index.resolve("Notes/CAFÉ CRÈME", "elsewhere") == decomposed
    assert index.resolve(unicodedata.normalize("NFD", "café crème"), "elsewhere") == decomposed
    assert "notes/café crème" in index
