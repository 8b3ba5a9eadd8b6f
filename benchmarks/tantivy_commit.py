"""What a tantivy commit costs for how many documents added since the last one (why the embedded engine
gathers its commits).

    .venv/bin/python benchmarks/tantivy_commit.py

One text field with the English chain and a fast u64 field, like the engine's; 60-word documents; each
size committed three times, all sizes twice in turn; the index in a temporary directory.
"""

from __future__ import annotations

import statistics
import tempfile
import time

import tantivy

from esbridge.engines.embedded.analysis import NATIVE

SIZES = (100, 2_000, 20_000)
TEXT = "the quick brown fox jumps over the lazy dog and studies protein folding in yeast cells " * 4


def main() -> None:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="esbridge_english", index_option="freq")
    builder.add_unsigned_field("_row", indexed=True, fast=True)
    schema = builder.build()
    with tempfile.TemporaryDirectory() as folder:
        index = tantivy.Index(schema, path=folder)
        for name, analyzer in NATIVE.items():
            index.register_tokenizer(name, analyzer)
        writer = index.writer(heap_size=256_000_000)
        spent: dict[int, list[float]] = {size: [] for size in SIZES}
        row = 0
        for _ in range(2):
            for size in SIZES:
                for _ in range(3):
                    for _ in range(size):
                        document = {"body": [f"{TEXT} {row}"], "_row": [row]}
                        writer.add_document(tantivy.Document.from_dict(document, schema))
                        row += 1
                    began = time.perf_counter()
                    writer.commit()
                    spent[size].append(time.perf_counter() - began)
        writer.wait_merging_threads()
    print("| documents per commit | commit p50 | per document |")
    print("| --- | --- | --- |")
    for size, samples in spent.items():
        median = statistics.median(samples)
        print(f"| {size:,} | {median * 1000:.1f} ms | {median / size * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
