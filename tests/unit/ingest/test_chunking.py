from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.ingest.chunking import approximate_token_count, chunk_document, split_text
from esbridge.ingest.model import Document, Section


def words(text: str) -> int:
    return len(text.split())


def doc_of(*sections: Section, doc_id: str = "folder/note", title: str = "Note") -> Document:
    return Document(doc_id=doc_id, title=title, sections=sections)


def numbered(start: int, count: int) -> str:
    return " ".join(f"w{index}" for index in range(start, start + count))


def chunk(doc: Document, max_tokens: int = 10, overlap_tokens: int = 3, min_tokens: int = 0) -> list[tuple[str, ...]]:
    return [
        (c.chunk_id, " > ".join(c.headings), c.body)
        for c in chunk_document(
            doc, max_tokens=max_tokens, overlap_tokens=overlap_tokens, min_tokens=min_tokens, count_tokens=words
        )
    ]


def test_chunks_follow_sections() -> None:
    doc = doc_of(Section("one two", ("A",), ("code()",)), Section("three", ("A", "B")))
    chunks = chunk_document(doc, max_tokens=10, overlap_tokens=2, min_tokens=0, count_tokens=words)
    assert [(c.chunk_id, c.chunk_index, c.doc_id, c.title) for c in chunks] == [
        ("folder/note#0", 0, "folder/note", "Note"),
        ("folder/note#1", 1, "folder/note", "Note"),
    ]
    assert [(c.headings, c.body, c.code) for c in chunks] == [
        (("A",), "one two", ("code()",)),
        (("A", "B"), "three", ()),
    ]
    assert all(c.document is doc for c in chunks)


def test_a_long_section_is_cut_at_paragraphs_first() -> None:
    text = "\n\n".join([numbered(0, 4), numbered(4, 4), numbered(8, 4)])
    assert chunk(doc_of(Section(text)), max_tokens=9, overlap_tokens=0) == [
        ("folder/note#0", "", "w0 w1 w2 w3\n\nw4 w5 w6 w7"),
        ("folder/note#1", "", "w8 w9 w10 w11"),
    ]


def test_windows_overlap_by_whole_sentences_when_they_fit() -> None:
    text = "One two three. Four five. Six seven eight nine. Ten eleven."
    assert split_text(text, 6, 3, words) == [
        "One two three. Four five.",
        "Four five. Six seven eight nine.",
        "seven eight nine. Ten eleven.",  # the last sentence is longer than the overlap: its last words
    ]


def test_windows_overlap_by_words_when_no_sentence_fits() -> None:
    assert split_text(numbered(0, 25), 10, 3, words) == [
        numbered(0, 10),
        numbered(7, 10),
        numbered(14, 10),
        numbered(21, 4),
    ]


def test_every_window_fits_and_the_text_is_covered_in_order() -> None:
    paragraphs = [numbered(0, 3) + ".", f"{numbered(3, 30)}. {numbered(33, 5)}.", numbered(38, 2)]
    windows = split_text("\n\n".join(paragraphs), 12, 4, words)
    assert all(words(window) <= 12 for window in windows)
    seen = [word.rstrip(".") for window in windows for word in window.split()]
    assert sorted(set(seen), key=lambda word: int(word[1:])) == [f"w{index}" for index in range(40)]
    firsts = [int(window.split()[0].rstrip(".")[1:]) for window in windows]
    assert firsts == sorted(firsts)


def test_a_word_longer_than_a_window_is_cut() -> None:
    def characters(text: str) -> int:
        return len(text)

    assert split_text("abcdefghij", 4, 0, characters) == ["abcd", "efgh", "ij"]


def test_code_goes_with_the_first_window_only() -> None:
    doc = doc_of(Section(numbered(0, 15), ("Usage",), ("make build",)))
    chunks = chunk_document(doc, max_tokens=10, overlap_tokens=2, min_tokens=0, count_tokens=words)
    assert [c.code for c in chunks] == [("make build",), ()]
    assert [c.headings for c in chunks] == [("Usage",), ("Usage",)]


def test_tiny_sections_under_the_same_parent_are_merged() -> None:
    doc = doc_of(
        Section("intro", ("Install",)),
        Section("apt install", ("Install", "Linux")),
        Section("brew install", ("Install", "Mac")),
        Section(numbered(0, 6), ("Configure",)),
        Section("see above", ("Configure", "Files", "Deep")),
    )
    assert chunk(doc, max_tokens=10, overlap_tokens=0, min_tokens=4) == [
        ("folder/note#0", "Install", "intro\n\nLinux\n\napt install\n\nMac\n\nbrew install"),
        ("folder/note#1", "Configure", numbered(0, 6)),
        ("folder/note#2", "Configure > Files > Deep", "see above"),
    ]


def test_merging_stops_at_max_tokens_and_at_other_parents() -> None:
    doc = doc_of(
        Section(numbered(0, 3), ("A", "x")),
        Section(numbered(3, 3), ("A", "y")),
        Section(numbered(6, 3), ("A", "z")),
        Section("tiny", ("B", "x")),
    )
    assert chunk(doc, max_tokens=8, overlap_tokens=0, min_tokens=5) == [
        ("folder/note#0", "A", f"x\n\n{numbered(0, 3)}\n\ny\n\n{numbered(3, 3)}"),
        ("folder/note#1", "A > z", numbered(6, 3)),
        ("folder/note#2", "B > x", "tiny"),
    ]


def test_sections_at_or_above_min_tokens_are_not_merged() -> None:
    doc = doc_of(Section(numbered(0, 4), ("A",)), Section(numbered(4, 4), ("B",)))
    assert len(chunk(doc, max_tokens=20, overlap_tokens=0, min_tokens=4)) == 2


def test_chunking_is_deterministic() -> None:
    doc = doc_of(*(Section(numbered(index * 7, 7) + ". More words here.", (f"H{index % 3}",)) for index in range(20)))
    assert chunk(doc, min_tokens=5) == chunk(doc, min_tokens=5)
    assert [cid for cid, _, _ in chunk(doc, min_tokens=5)] == [
        f"folder/note#{index}" for index in range(len(chunk(doc, min_tokens=5)))
    ]


@pytest.mark.parametrize("sections", [(), (Section(""),), (Section("  \n"),)])
def test_a_document_without_text_still_has_one_chunk(sections: tuple[Section, ...]) -> None:
    (only,) = chunk_document(doc_of(*sections), max_tokens=10, overlap_tokens=0, min_tokens=0, count_tokens=words)
    assert (only.chunk_id, only.title, only.body, only.headings) == ("folder/note#0", "Note", "", ())
    assert only.embedding_text == "Note"


def test_a_heading_without_text_is_kept_as_a_chunk() -> None:
    (only,) = chunk_document(
        doc_of(Section("", ("Todo",))), max_tokens=10, overlap_tokens=0, min_tokens=0, count_tokens=words
    )
    assert (only.headings, only.body) == (("Todo",), "")
    assert only.embedding_text == "Note > Todo"


@pytest.mark.parametrize(
    ("max_tokens", "overlap_tokens", "min_tokens"), [(0, 0, 0), (10, 10, 0), (10, -1, 0), (10, 2, -1)]
)
def test_impossible_settings_are_refused(max_tokens: int, overlap_tokens: int, min_tokens: int) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_document(doc_of(), max_tokens=max_tokens, overlap_tokens=overlap_tokens, min_tokens=min_tokens)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("word", 2),
        ("three little words", 4),
        ("Hello, world.", 5),
        ("read_vault(root)", 5),
        ("a" * 64, 2),
        ("a" * 65, 3),
        ("a" * 400_000, 8125),
        ("x " + "a" * 129 + ".", 7),
    ],
)
def test_approximate_token_count(text: str, expected: int) -> None:
    assert approximate_token_count(text) == expected


def test_a_word_longer_than_a_chunk_can_hold_is_cut_by_the_default_counter() -> None:
    """A run of word characters counts by its length (one word per 64 characters), so a 400,000-letter word
    (a data URI in a note) is cut into chunks that fit instead of making one 400 KB chunk."""
    word = "A" * 400_000
    doc = doc_of(Section(f"An image: {word} and after."))
    chunks = chunk_document(doc, max_tokens=200, overlap_tokens=32, min_tokens=24)
    assert len(chunks) > 40
    assert all(approximate_token_count(c.body) <= 200 for c in chunks)
    assert max(len(c.body) for c in chunks) <= 153 * 64
    assert "".join(c.body for c in chunks).replace("A", "") == "n image: and after."
    assert sum(c.body.count("A") for c in chunks) == 400_000 + 1  # no window overlaps a full one


def test_the_approximate_counter_is_the_default() -> None:
    doc = doc_of(Section(" ".join(["word"] * 100)))
    chunks = chunk_document(doc, max_tokens=50, overlap_tokens=5, min_tokens=0)
    assert len(chunks) > 2
    assert all(approximate_token_count(c.body) <= 50 for c in chunks)


@settings(max_examples=60, deadline=None)
@given(
    paragraphs=st.lists(
        st.lists(st.text(alphabet="abcdef", min_size=1, max_size=12), min_size=1, max_size=40), min_size=1, max_size=6
    ),
    max_tokens=st.integers(min_value=2, max_value=30),
    overlap_share=st.floats(min_value=0, max_value=0.9),
)
def test_windows_never_exceed_max_tokens(paragraphs: list[list[str]], max_tokens: int, overlap_share: float) -> None:
    text = "\n\n".join(" ".join(paragraph) for paragraph in paragraphs)
    windows = split_text(text, max_tokens, int(max_tokens * overlap_share), words)
    assert all(1 <= words(window) <= max_tokens for window in windows)
    assert windows[0].split()[0] == text.split()[0]
    assert windows[-1].split()[-1] == text.split()[-1]
