"""The chunks every engine of the contract suite is loaded with, and what the tests read from answers."""

from __future__ import annotations

from datetime import timezone
from typing import Any

from esbridge.engines.base import SearchResult
from esbridge.mappings.schema import IndexParameters

DIMENSION = 4
PARAMS = IndexParameters(dimension=DIMENSION)


def _chunk(
    chunk_id: str, title: str, body: str, tags: list[str], vector: list[float], modified: str, **extra: Any
) -> dict[str, Any]:
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id.split("#")[0],
        "chunk_index": int(chunk_id.split("#")[1]),
        "source": "contract",
        "title": title,
        "body": body,
        "tags": tags,
        "vector": vector,
        "modified_at": modified,
        "embedding": "ok",
        **extra,
    }


CHUNKS: dict[str, dict[str, Any]] = {
    chunk["chunk_id"]: chunk
    for chunk in (
        _chunk(
            "astro#0",
            "Telescope guide",
            "Choosing lenses and mounts for viewing.",
            ["space"],
            [0, 0, 1, 0],
            "2024-05-01T00:00:00+00:00",
        ),
        _chunk(
            "astro#1",
            "Sky notes",
            "A small telescope shows the rings of Saturn.",
            ["space"],
            [0, 0.1, 0.9, 0],
            "2023-05-01T00:00:00+00:00",
        ),
        _chunk(
            "bread#0",
            "Sourdough bread",
            "Flour, water, salt and a starter.",
            ["food"],
            [1, 0, 0, 0],
            "2024-01-10T00:00:00+00:00",
        ),
        _chunk(
            "soup#0",
            "Tomato soup",
            "Simmer tomatoes with basil and garlic.",
            ["food"],
            [0.9, 0.1, 0, 0],
            "2022-02-01T00:00:00+00:00",
            status="deprecated",
        ),
        _chunk(
            "fox#0",
            "Foxes",
            "The quick brown fox jumps over the lazy dog.",
            ["animals"],
            [0, 1, 0, 0],
            "2021-06-01T00:00:00+00:00",
        ),
        _chunk(
            "owl#0",
            "Owls",
            "Owls hunt mice at night in the forest.",
            ["animals"],
            [0, 0.9, 0.1, 0],
            "2021-07-01T00:00:00+00:00",
        ),
        _chunk(
            "helpers#0",
            "Helpers",
            "Utility functions.",
            ["code"],
            [0, 0, 0, 1],
            "2024-02-01T00:00:00+00:00",
            code="def getUserName(user_id): return os.path.join(base, user_name)",
        ),
        _chunk(
            "git#0",
            "Version control",
            "Commits, branches and merges.",
            ["code"],
            [0.1, 0, 0, 0.9],
            "2024-02-02T00:00:00+00:00",
        ),
        _chunk(
            "archive#0",
            "Archive one",
            "Old records kept for reference.",
            ["rare"],
            [-1, 0, 0, 0.1],
            "2020-01-01T00:00:00+00:00",
        ),
        _chunk(
            "archive#1",
            "Archive two",
            "Older records kept for audits.",
            ["rare"],
            [-1, 0.1, 0, 0],
            "2020-01-02T00:00:00+00:00",
        ),
        _chunk(
            "archive#2",
            "Archive three",
            "Oldest records, rarely read.",
            ["rare"],
            [-0.9, 0, -0.1, 0],
            "2020-01-03T00:00:00+00:00",
        ),
    )
}
UTC = timezone.utc


def ids(result: SearchResult) -> list[str]:
    return [hit.id for hit in result.hits]
