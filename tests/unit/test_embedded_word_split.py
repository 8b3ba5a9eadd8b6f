"""``analysis.WORDS`` is a cheaper spelling of the word split analysis version 2 was created with: indices made
with the first keep their tokens only while both give the same tokens, offsets and positions, through tantivy's
own regex tokenizer (Rust's regex crate, whose classes are not Python's)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest
import tantivy

from esbridge.engines.embedded.analysis import WORDS
from tests.support.data import SHARED, require

PREVIOUS_WORDS = (
    r"\p{Han}|\p{Hiragana}"
    r"|\p{Extended_Pictographic}(?:\x{FE0F}|\p{Emoji_Modifier}|\x{200D}\p{Extended_Pictographic})*"
    r"|_*(?:(?:[\w--\d_--\p{Han}--\p{Hiragana}](?:[:\x{B7}.'\x{2019}]?[\w--\d_--\p{Han}--\p{Hiragana}])*"
    r"|\d(?:[,;.'\x{2019}]?\d)*)_*)+"
)
"""The expression analysis version 2 shipped with."""

DATA = SHARED / "data"
ALPHABET = [
    *"abcXYZéßüİ\u0131ǅª\uff41",
    *"0123456789٣੩①Ⅻ",
    *".,;:'\u2019·_-/#",
    " ",
    "  ",
    "\n",
    *"漢字中国\u3007々",
    *"ひらがなゝ",
    *"カタカナーｶﾀ",
    *"😀👍❤✈©Ⓜℹ🏳🌈👩💻",
    "\ufe0f",
    "\u200d",
    "\u200c",
    "\u20e3",
    "\U0001f3fb",
    "\U0001f3ff",
    "\u0301",
    "\u0e01",
    "अ",
    "\u093f",
]
"""Letters of several scripts, digits, the separators ``WORDS`` joins across, Han, Hiragana, Katakana, emoji
with variation selector, zero-width joiner and skin-tone modifiers, combining marks."""


def tokens(analyzer: tantivy.TextAnalyzer, text: str) -> list[tuple[str, int, int, int]]:
    found = analyzer.pre_tokenize(text).tokens
    return [(token.text, token.position, token.char_offset_from, token.char_offset_to) for token in found]


@pytest.fixture(scope="module")
def both() -> tuple[tantivy.TextAnalyzer, tantivy.TextAnalyzer]:
    def split(pattern: str) -> tantivy.TextAnalyzer:
        return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(pattern)).build()

    return split(PREVIOUS_WORDS), split(WORDS)


def differences(both: tuple[tantivy.TextAnalyzer, tantivy.TextAnalyzer], texts: list[str]) -> list[str]:
    previous, current = both
    return [text for text in texts if tokens(previous, text) != tokens(current, text)]


def fuzz(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = "".join(
            rng.choice(ALPHABET) if rng.random() < 0.9 else chr(rng.randint(0x20, 0x2FFFF))
            for _ in range(rng.randint(1, 40))
        )
        texts.append("".join(char for char in text if not 0xD800 <= ord(char) <= 0xDFFF))
    return texts


def test_the_same_tokens_on_random_text_of_many_scripts_and_emoji(both: tuple[tantivy.TextAnalyzer, ...]) -> None:
    texts = fuzz(20_000, seed=83)
    assert sum(map(len, (tokens(both[0], text) for text in texts))) > 50_000
    assert differences(both, texts) == []  # type: ignore[arg-type]


def test_the_same_tokens_around_code_points_of_every_plane(both: tuple[tantivy.TextAnalyzer, ...]) -> None:
    """Each code point below U+3400 and every 37th above, alone and beside letters, digits, underscores, emoji and
    separators (benchmarks/word_split.py --parity checks every code point)."""
    codes = [code for code in range(0x110000) if (code < 0x3400 or code % 37 == 0) and not 0xD800 <= code <= 0xDFFF]
    forms = ("{}", "a{}a", "1{}1", "_{}", "\U0001f600\u200d{}", "x.{}", "9,{}")
    texts = [
        " ".join(form.format(chr(code)) for code in codes[at : at + 2000])
        for form in forms
        for at in range(0, len(codes), 2000)
    ]
    assert differences(both, texts) == []  # type: ignore[arg-type]


def records(path: Path, count: int) -> Iterator[str]:
    with path.open(encoding="utf-8") as corpus:
        for line in islice(corpus, count):
            record = json.loads(line)
            yield f"{record.get('title', '')}. {record['text']}"


def test_the_same_tokens_on_scifact_cisi_med_and_the_vault(both: tuple[tantivy.TextAnalyzer, ...]) -> None:
    require(DATA)
    texts = [
        *records(DATA / "beir" / "scifact" / "corpus.jsonl", 500),
        *records(DATA / "classic" / "cisi" / "corpus.jsonl", 300),
        *records(DATA / "classic" / "med" / "corpus.jsonl", 300),
        *(note.read_text(encoding="utf-8") for note in sorted((DATA / "vault").rglob("*.md"))[:300]),
    ]
    assert len(texts) == 1400
    assert differences(both, texts) == []  # type: ignore[arg-type]
