"""A deterministic stand-in for an embedding model, the records most unit tests index with it, and a
BEIR folder writer for the evaluation's tests."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class HashingEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get close vectors. A text without a word (``""``,
    ``"!!!"``) gets the zero vector, which esbridge treats as nothing to embed (``embeddings.base.passage_vectors``)."""

    name = identity = "hashing-32"
    dimension = 32
    max_tokens = 512

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                vector[hashlib.sha1(word.encode()).digest()[0] % self.dimension] += 1.0  # noqa: S324
            norm = sum(x * x for x in vector) ** 0.5 or 1.0
            vectors.append([x / norm for x in vector])
        return vectors


RECORDS: list[dict[str, Any]] = [
    {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
     "tags": ["energy"], "links": ["grid"]},
    {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate power.", "tags": ["energy"]},
    {"id": "grid", "title": "Power grid", "text": "Transmission lines carry current between regions."},
    {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough."},
    {"id": "old", "title": "Old energy memo", "text": "Coal plants burn fuel.", "status": "deprecated"},
]  # fmt: skip


class OtherHashingEmbedder(HashingEmbedder):
    """Another 32-dimensional model: same size, other vectors."""

    name = identity = "other-hashing-32"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(reversed(vector)) for vector in super().embed(texts)]


def beir_folder(folder: Path, docs: dict[str, str], queries: dict[str, tuple[str, str]]) -> Path:
    """A BEIR folder; ``queries`` maps a query id to its text and the one relevant document."""
    (folder / "qrels").mkdir(parents=True)
    corpus = [json.dumps({"_id": doc, "title": "", "text": text}) for doc, text in docs.items()]
    (folder / "corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    lines = [json.dumps({"_id": query, "text": text}) for query, (text, _) in queries.items()]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = [f"{query}\t{doc}\t1" for query, (_, doc) in queries.items()]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", "utf-8")
    return folder
