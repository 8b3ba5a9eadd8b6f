"""Chunking gives byte for byte the chunks it gave before it counted windows from tallies.

Chunk ids and content hashes decide what a re-run re-embeds, so any difference would re-embed every user's
documents. ``chunking_oracle`` is the implementation from before, kept verbatim; every case here compares
chunk ids, bodies, headings, code, order and content hashes (or ``split_text`` windows) of the two.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Iterable
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.chunking import approximate_token_count, chunk_document, split_text
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Section
from tests.support.data import CISI, DENDRON_VAULT, MED, SCIFACT, require
from tests.unit.ingest import chunking_oracle as oracle

Counter = Callable[[str], int]
# (max_tokens, overlap_tokens, min_tokens): the ingest defaults (every document), and small windows that cut
# words and sentences (every twentieth; the whole corpora under all of them took 3 minutes and matched too)
SETTINGS = [(200, 32, 24), (8, 0, 0), (16, 4, 4), (32, 31, 8), (64, 16, 0)]


def through_the_exact_path(text: str) -> int:
    """The approximate count under another name, so chunking counts every window whole as before."""
    return approximate_token_count(text)


def assert_same_chunks(docs: Iterable[Document], settings_: list[tuple[int, int, int]], count: Counter) -> int:
    compared = 0
    for doc in docs:
        for max_tokens, overlap_tokens, min_tokens in settings_:
            options = {"max_tokens": max_tokens, "overlap_tokens": overlap_tokens, "min_tokens": min_tokens}
            new = chunk_document(doc, **options, count_tokens=count)
            old = oracle.chunk_document(doc, **options, count_tokens=count)
            assert new == old, (doc.doc_id, options)
            assert [c.content_hash for c in new] == [c.content_hash for c in old]
            compared += len(new)
    return compared


def documents(items: Iterable[object]) -> list[Document]:
    return [item for item in items if isinstance(item, Document)]


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("scifact", lambda: read_beir_corpus(require(SCIFACT))),
        ("cisi", lambda: read_beir_corpus(require(CISI))),
        ("med", lambda: read_beir_corpus(require(MED))),
        ("dendron", lambda: read_vault(require(DENDRON_VAULT))),
    ],
)
def test_shared_corpora_chunk_as_before(name: str, read: Callable[[], Iterable[object]]) -> None:
    docs = documents(read())
    assert assert_same_chunks(docs, SETTINGS[:1], approximate_token_count) > len(docs)
    assert_same_chunks(docs[::20], SETTINGS[1:], approximate_token_count)
    assert_same_chunks(docs[::50], SETTINGS, through_the_exact_path)


HUGE_WORD_CASES = {
    "letters": "a" * 2000,
    "word and mark": "a." * 1000,
    "marks": "-" * 1500,
    "underscores and digits": "_1a" * 700,
    "cjk": "漢字仮名交じり文" * 250,
    "emoji": "😀👍🏽" * 500,
    "combining": "e\u0301" * 1000,
}


def adversarial_texts() -> dict[str, str]:
    rng = random.Random(20261126)
    vocabulary = ["alpha", "beta", "gamma", "δέλτα", "naïve", "co-op", "x", "e.g", "3.14", "don't", "_id", "Ωmega"]
    bare = " ".join(rng.choice(vocabulary[:5]) for _ in range(4000))
    texts = {f"one huge word: {name}": word for name, word in HUGE_WORD_CASES.items()}
    texts |= {
        "huge words between words": "start " + "z" * 2000 + " middle " + "a.b" * 500 + " end.",
        "bare words": bare,
        "bare words, tabs and no-break spaces": bare.replace("a ", "a\t", 300).replace("e ", "e\xa0", 300),
        "sentences": " ".join(f"{' '.join(rng.choices(vocabulary, k=rng.randint(1, 30)))}." for _ in range(300)),
        "mixed newlines": "".join(
            rng.choice(vocabulary) + rng.choice([" ", "\n", "\r\n", "\n\n", "\n \t\n", ". ", "! ", "…\n", "\r"])
            for _ in range(3000)
        ),
        "cjk sentences": "。".join("漢字仮名交じり文" * rng.randint(1, 12) for _ in range(200)),
        "cjk and latin": " ".join(rng.choice(["東京", "tokyo", "大阪。", "🍣", "ラーメン!"]) for _ in range(2000)),
        "emoji between words": " ".join(rng.choice(["🙂", "ok", "👍🏽", "fine.", "🇫🇷"]) for _ in range(2000)),
        "whitespace-only sentences": "x. \xa0\ny. \u2003\n" * 400,
        "space before breaks": "one two  \n\n three\t\n  \n four. \r\n five" * 200,
    }
    return texts


ADVERSARIAL = adversarial_texts()
SPLITS = [(1, 0), (2, 1), (8, 0), (8, 3), (8, 40), (16, 15), (32, 8), (32, 100), (200, 32)]


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("count", [approximate_token_count, through_the_exact_path])
def test_adversarial_texts_split_as_before(name: str, count: Counter) -> None:
    text = ADVERSARIAL[name]
    for max_tokens, overlap_tokens in SPLITS:
        expected = oracle.split_text(text, max_tokens, overlap_tokens, count)
        assert split_text(text, max_tokens, overlap_tokens, count) == expected, (max_tokens, overlap_tokens)


PIECES = st.sampled_from(
    [
        "x" * 40,  # two of them join into a run that counts as two words
        *["a", "ab", "word", "_", "1", ".", "!", "?", "…", "-", "😀", "🏽", "e\u0301", "Σ", "ß", "İ", "漢", "字", "。"],
        *[" ", "  ", "\t", "\n", "\n\n", "\r\n", "\n \n", "\xa0", "\u3000"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(PIECES, max_size=120),
    max_tokens=st.integers(1, 24),
    overlap_tokens=st.integers(0, 30),
    counter=st.sampled_from([approximate_token_count, through_the_exact_path, len]),
)
def test_any_text_splits_as_before(pieces: list[str], max_tokens: int, overlap_tokens: int, counter: Counter) -> None:
    text = "".join(pieces)
    assert split_text(text, max_tokens, overlap_tokens, counter) == oracle.split_text(
        text, max_tokens, overlap_tokens, counter
    )


def test_a_word_by_str_isalnum_is_one_run_of_word_characters() -> None:
    """The tallies read ``str.isalnum()`` text as one ``\\w+`` run without marks; true of every code point."""
    word = re.compile(r"\w")
    assert not [c for c in map(chr, range(sys.maxunicode + 1)) if c.isalnum() and not word.fullmatch(c)]


def test_another_counter_counts_each_whole_window() -> None:
    """Any other counter is called on each whole window as before: nothing is assumed of a model's tokenizer."""
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text.split())

    split_text("one two three four five six", 3, 1, counting)
    assert "one two three four" in calls


def tokenizer_counter(model: str, *, lower: bool = False) -> Counter:
    """A model tokenizer's count with special tokens, as the ONNX embedders count (``lower`` as the torch
    counter prepares text for an uncased model)."""
    tokenizers = pytest.importorskip("tokenizers")
    from esbridge.embeddings.model_store import store_folder
    from tests.support.models import require_stored

    require_stored(model)
    tokenizer = tokenizers.Tokenizer.from_file(str(store_folder(model) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    if lower:
        return lambda text: len(tokenizer.encode(text.lower()).ids)
    return lambda text: len(tokenizer.encode(text).ids)


@pytest.mark.parametrize(
    ("model", "lower"),
    [("BAAI/bge-small-en-v1.5", False), ("sentence-transformers/all-MiniLM-L6-v2", True)],
)
def test_model_tokenizers_chunk_as_before(model: str, lower: bool) -> None:
    count = tokenizer_counter(model, lower=lower)
    scifact = documents(islice(read_beir_corpus(require(SCIFACT)), 0, 5183, 80))
    vault = documents(read_vault(require(DENDRON_VAULT)))[::80]
    assert_same_chunks([*scifact, *vault], [(256, 32, 24), (16, 4, 4)], count)
    for name, text in ADVERSARIAL.items():
        short = text[:800]
        for max_tokens, overlap_tokens in [(8, 3), (16, 40), (32, 8)]:
            expected = oracle.split_text(short, max_tokens, overlap_tokens, count)
            assert split_text(short, max_tokens, overlap_tokens, count) == expected, (name, max_tokens)


def test_sections_and_code_chunk_as_before() -> None:
    sections = [
        Section("short", ("A",), ("code()",)),
        Section(ADVERSARIAL["sentences"][:3000], ("A", "B"), ("more()", "code()")),
        Section("", ("A", "C")),
        Section(ADVERSARIAL["bare words"][:4000], ("D",)),
        Section("tail", ("D", "E")),
    ]
    doc = Document(doc_id="notes/long", title="Long", sections=tuple(sections))
    assert_same_chunks([doc], SETTINGS, approximate_token_count)
