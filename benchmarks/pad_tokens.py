"""What padding documents for BM25's b costs tantivy (``esbridge/engines/embedded/lengths.py``): documents
indexed plain, padded with a word, and padded with empty tokens (what the engine does), taking turns.

    .venv/bin/python benchmarks/pad_tokens.py ../shared/data/beir/scifact --rounds 3

Four fields like the engine's title and body with their ``.std`` sub-fields (English and standard chains),
60-word bodies from the corpus, each field padded by what b 0.4 gives SciFact's chunks (41, 56, 9 and 12
tokens); CPU time per document counts tantivy's indexing threads, the commit included.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import tantivy

from esbridge.engines.embedded.analysis import NATIVE

FIELDS = {"body": ("esbridge_english_2", 41), "body_std": ("esbridge_standard_2", 56)}
FIELDS |= {"title": ("esbridge_english_2", 9), "title_std": ("esbridge_standard_2", 12)}
WORD = "esbridgelengthpad"


def _padding(word: str, tokens: int) -> tantivy.PreTokenizedString:
    step = len(word) + 1
    words = [tantivy.Token(word, place, place * step, place * step + len(word)) for place in range(tokens)]
    return tantivy.PreTokenizedString(" ".join([word] * tokens) if word else "", words)


def index_once(records: list[tuple[str, str]], variant: str) -> tuple[float, float]:
    """Wall and CPU microseconds per document for one variant: plain, word or empty."""
    builder = tantivy.SchemaBuilder()
    for name, (tokenizer, _) in FIELDS.items():
        builder.add_text_field(name, tokenizer_name=tokenizer, index_option="freq")
    schema = builder.build()
    pads = {name: _padding(WORD if variant == "word" else "", tokens) for name, (_, tokens) in FIELDS.items()}
    with tempfile.TemporaryDirectory() as folder:
        index = tantivy.Index(schema, path=folder)
        for name, analyzer in NATIVE.items():
            index.register_tokenizer(name, analyzer)
        writer = index.writer(heap_size=256_000_000)
        wall, cpu = time.perf_counter(), time.process_time()
        for title, body in records:
            document = tantivy.Document.from_dict(
                {"body": [body], "body_std": [body], "title": [title], "title_std": [title]}, schema
            )
            if variant != "plain":
                for name, pad in pads.items():
                    document.add_pre_tokenized_text(name, pad)
            writer.add_document(document)
        writer.commit()
        writer.wait_merging_threads()
        return (time.perf_counter() - wall) / len(records) * 1e6, (time.process_time() - cpu) / len(records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path, help="a BEIR folder (its corpus.jsonl)")
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    records: list[tuple[str, str]] = []
    with (args.dataset / "corpus.jsonl").open() as corpus:
        for line in corpus:
            row = json.loads(line)
            records.append((row.get("title", ""), " ".join(row.get("text", "").split()[:60])))
    records = (records * (args.documents // max(len(records), 1) + 1))[: args.documents]
    print(f"{len(records):,} documents, four text fields, {args.rounds} rounds")
    for round_number in range(1, args.rounds + 1):
        for variant in ("plain", "word", "empty"):
            wall, cpu = index_once(records, variant)
            print(f"round {round_number} {variant:6} wall {wall:6.1f} us/doc  cpu {cpu:6.1f} us/doc", flush=True)


if __name__ == "__main__":
    main()
