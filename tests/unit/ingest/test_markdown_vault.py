"""Reading a Markdown vault: which files are notes, their ids, order, and what is a problem or a source error.
What a note holds: test_markdown_vault_notes.py; its links: test_markdown_vault_links.py."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from esbridge.errors import EsbridgeWarning, SourceError
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Problem
from tests.unit.ingest.vaults import one_note, read_documents, write_vault

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


def test_a_named_pipe_is_a_problem_and_is_not_waited_on(tmp_path: Path) -> None:
    write_vault(tmp_path, {"good.md": "[[pipe]]"})
    os.mkfifo(tmp_path / "pipe.md")  # opening it to read would wait for a writer
    (tmp_path / "linked.md").symlink_to(tmp_path / "pipe.md")
    done = threading.Event()

    def release_waiting_readers() -> None:  # so that a reader that does wait fails the test instead of hanging
        while not done.wait(0.5):
            with contextlib.suppress(OSError):  # ENXIO: nothing is reading it
                os.close(os.open(tmp_path / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))

    releaser = threading.Thread(target=release_waiting_readers)
    releaser.start()
    try:
        items = list(read_vault(tmp_path))
    finally:
        done.set()
        releaser.join()
    problems = [item for item in items if isinstance(item, Problem)]
    assert [(problem.source, problem.doc_id) for problem in problems] == [
        (str(tmp_path / "linked.md"), "linked"),
        (str(tmp_path / "pipe.md"), "pipe"),
    ]
    assert all("not a regular file" in problem.reason for problem in problems)
    [good] = [item for item in items if isinstance(item, Document)]
    assert good.links == ("pipe",)


def test_a_file_name_that_is_not_utf8_is_a_problem_and_the_others_are_still_read(tmp_path: Path) -> None:
    write_vault(tmp_path, {"good.md": "good"})
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("a Latin-1 file name")
    items = list(read_vault(tmp_path))
    problems = [item for item in items if isinstance(item, Problem)]
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["good"]
    assert [(problem.source, problem.doc_id) for problem in problems] == [(f"{tmp_path}/caf\\xe9.md", "caf\\xe9")]
    assert "file name is not UTF-8" in problems[0].reason


def test_a_file_name_holding_a_bidi_override_is_a_problem_shown_escaped(tmp_path: Path) -> None:
    write_vault(tmp_path, {"good.md": "good", "invoice\u202egpj.md": "reads as invoicejpg.md", "a\x1bb.md": "esc"})
    items = list(read_vault(tmp_path))
    assert [item.doc_id for item in items if isinstance(item, Document)] == ["good"]
    problems = sorted((item for item in items if isinstance(item, Problem)), key=lambda problem: problem.source)
    assert [problem.source for problem in problems] == [f"{tmp_path}/a\\u001bb.md", f"{tmp_path}/invoice\\u202egpj.md"]
    assert [problem.doc_id for problem in problems] == ["a\x1bb", "invoice\u202egpj"]  # what was indexed is kept
    assert problems[0].reason.startswith(
        "the file name, the note's id, holds the control character U+001B at position 1"
    )
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE) at position 7" in problems[1].reason
    assert all("\u202e" not in problem.reason and "\x1b" not in problem.reason for problem in problems)


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
