"""What the embedded engine's word split costs per token in tantivy, for each way of writing it.

    flock /tmp/esbridge-bench.lock .venv/bin/python benchmarks/word_split.py --texts 500 --rounds 5
    .venv/bin/python benchmarks/word_split.py --instructions
    .venv/bin/python benchmarks/word_split.py --parity

Texts: SciFact, CISI and MED records (title and text) and notes of the Markdown vault, ``--texts`` of each.
By default each candidate's regex tokenizer indexes them into a tantivy index of its own (one text field, one
indexing thread, added and committed), the candidates alternated, ``--rounds`` times; printed: the process's
CPU per token, best and median. ``--instructions`` runs the tokenizer alone under valgrind (callgrind) over
two numbers of SciFact texts and prints the instructions per token between them, which the machine's load does
not change. ``--parity`` compares the tokens (text, position, offsets) of ``previous`` and ``WORDS`` on every
text of the four sources, every code point in 17 settings and 200,000 random strings.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import tantivy

from esbridge.engines.embedded.analysis import WORDS

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CANDIDATES = {
    "previous": (
        r"\p{Han}|\p{Hiragana}"
        r"|\p{Extended_Pictographic}(?:\x{FE0F}|\p{Emoji_Modifier}|\x{200D}\p{Extended_Pictographic})*"
        r"|_*(?:(?:[\w--\d_--\p{Han}--\p{Hiragana}](?:[:\x{B7}.'\x{2019}]?[\w--\d_--\p{Han}--\p{Hiragana}])*"
        r"|\d(?:[,;.'\x{2019}]?\d)*)_*)+"
    ),
    "WORDS": WORDS,
    r"\w+": r"\w+",
}
"""``previous``: the expression analysis version 2 was created with; ``WORDS``: the engine's now; ``\\w+``:
analysis version 1 (other tokens), for scale."""


def records(path: Path, count: int | None) -> Iterator[str]:
    with path.open(encoding="utf-8") as corpus:
        for line in islice(corpus, count):
            record = json.loads(line)
            yield f"{record.get('title', '')}. {record['text']}"


def corpus(data: Path, count: int | None) -> list[str]:
    notes = sorted((data / "vault").rglob("*.md"))[:count]
    return [
        *records(data / "beir" / "scifact" / "corpus.jsonl", count),
        *records(data / "classic" / "cisi" / "corpus.jsonl", count),
        *records(data / "classic" / "med" / "corpus.jsonl", count),
        *(note.read_text(encoding="utf-8", errors="replace") for note in notes),
    ]


def analyzer(pattern: str) -> tantivy.TextAnalyzer:
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(pattern)).build()


def index_seconds(pattern: str, texts: list[str]) -> float:
    """The process's CPU to index ``texts`` into a fresh in-memory index whose one field ``pattern`` splits."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="words", index_option="position")
    index = tantivy.Index(builder.build())
    index.register_tokenizer("words", analyzer(pattern))
    writer = index.writer(200_000_000, 1)
    documents = [tantivy.Document(body=text) for text in texts]
    began = time.process_time()
    for document in documents:
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    return time.process_time() - began


def timing(texts: list[str], rounds: int) -> None:
    counts = {name: sum(len(analyzer(pattern).analyze(text)) for text in texts) for name, pattern in CANDIDATES.items()}
    spent: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    load = [Path("/proc/loadavg").read_text().split()[0]]
    for _ in range(rounds):
        for name, pattern in CANDIDATES.items():
            spent[name].append(index_seconds(pattern, texts) / counts[name] * 1e6)
        load.append(Path("/proc/loadavg").read_text().split()[0])
    print(f"{len(texts):,} texts indexed, {rounds} rounds alternated (load {', '.join(load)}):")
    for name, values in spent.items():
        print(
            f"  {name:9s} {counts[name]:>9,} tokens  best {min(values):.3f} us/token  "
            f"median {statistics.median(values):.3f}  ({' '.join(f'{value:.3f}' for value in values)})"
        )


def count_tokens(pattern: str, count: int, data: Path) -> None:
    """The child under valgrind: split ``count`` SciFact texts, print how many tokens."""
    split = analyzer(pattern)
    split.analyze("warm up")
    print(
        "tokens", sum(len(split.analyze(text)) for text in records(data / "beir" / "scifact" / "corpus.jsonl", count))
    )


def instructions(small: int, large: int, data: Path) -> None:
    print(f"instructions per token, between {small} and {large} SciFact texts (valgrind --tool=callgrind):")
    for name, pattern in CANDIDATES.items():
        runs = []
        for count in (small, large):
            command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
            answer = subprocess.run(  # noqa: S603 - valgrind over this script
                [*command, "--data", str(data), "--child", pattern, str(count)],
                capture_output=True,
                text=True,
                check=True,
            )
            tokens = re.search(r"tokens (\d+)", answer.stdout)
            collected = re.search(r"Collected : (\d+)", answer.stderr)
            if tokens is None or collected is None:
                raise SystemExit(f"valgrind gave no count for {name}: {answer.stderr[-500:]}")
            runs.append((int(tokens.group(1)), int(collected.group(1))))
        (few, base), (many, total) = runs
        print(f"  {name:9s} {(total - base) / (many - few):8,.0f}  ({many - few:,} tokens)")


def fuzz(count: int) -> Iterator[str]:
    rng = random.Random(83)  # noqa: S311 (a benchmark's sample, not a secret)
    alphabet = [
        *"abcXYZéßüİ\u0131ǅª\uff410123456789٣੩①Ⅻ.,;:'\u2019·_-/# \n",
        *"漢字中国\u3007々ひらがなゝカタカナーｶﾀ😀👍❤✈©Ⓜℹ🏳🌈👩💻",
        *"\ufe0f\u200d\u200c\u20e3\U0001f3fb\U0001f3ff\u0301\u0e01अ\u093f",
    ]
    for _ in range(count):
        text = "".join(
            rng.choice(alphabet) if rng.random() < 0.9 else chr(rng.randint(0x20, 0x2FFFF))
            for _ in range(rng.randint(1, 40))
        )
        yield "".join(char for char in text if not 0xD800 <= ord(char) <= 0xDFFF)


def code_points() -> Iterator[str]:
    points = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    forms = ["{}", "a{}", "{}a", "a{}a", "1{}1", "_{}", "{}_", "{}\ufe0f", "\U0001f600{}", "\U0001f600\u200d{}"]
    forms += ["a{}1", "1{}a", "{}{}", "x.{}", "{}.x", "9,{}", "{}\U0001f3fb"]
    for at in range(0, len(points), 2000):
        for form in forms:
            yield " ".join(form.format(point, point) for point in points[at : at + 2000])


def parity(data: Path) -> None:
    def tokens(split: tantivy.TextAnalyzer, text: str) -> list[tuple[str, int, int, int]]:
        found = split.pre_tokenize(text).tokens
        return [(token.text, token.position, token.char_offset_from, token.char_offset_to) for token in found]

    previous, current = analyzer(CANDIDATES["previous"]), analyzer(WORDS)
    for name, texts in (
        ("corpora and vault", corpus(data, None)),
        ("code points", code_points()),
        ("fuzz", fuzz(200_000)),
    ):
        count = total = 0
        differing = []
        for text in texts:
            expected = tokens(previous, text)
            count, total = count + 1, total + len(expected)
            if tokens(current, text) != expected:
                differing.append(text)
        print(f"{name}: {count:,} texts, {total:,} tokens, {len(differing)} with other tokens {differing[:3]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=500, help="texts of each source")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--parity", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        count_tokens(args.child[0], int(args.child[1]), args.data)
    elif args.instructions:
        instructions(20, 100, args.data)
    elif args.parity:
        parity(args.data)
    else:
        timing(corpus(args.data, args.texts), args.rounds)


if __name__ == "__main__":
    main()
