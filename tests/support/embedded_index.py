"""Small embedded indices for the engine's tests: one vector field (and what tests of its float32 copies read
back from it), and text, keyword, number and vector fields (`mapping`, `points`, `load`, `knn`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann, backfill
from esbridge.engines.embedded.floats import FloatCopies
from esbridge.engines.embedded.store import Store

DIMENSION = 8
ROWS = 300
MAPPING = {
    "settings": {"index": {"knn": True}},
    "mappings": {
        "properties": {
            "tag": {"type": "keyword"},
            "v": {"type": "knn_vector", "dimension": DIMENSION, "method": {"space_type": "cosinesimil"}},
        }
    },
}
QUERIES = np.random.default_rng(7).standard_normal((5, DIMENSION)).astype(np.float32)

Answers = list[list[tuple[str, float]]]


def vectors(count: int, seed: int = 0) -> np.ndarray[Any, np.dtype[np.float32]]:
    found: np.ndarray[Any, np.dtype[np.float32]] = (
        np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    )
    return found


def answers(engine: EmbeddedEngine) -> Answers:
    found = []
    for query in QUERIES:
        body = {"size": 10, "query": {"knn": {"v": {"vector": query.tolist(), "k": 10}}}}
        found.append([(hit.id, hit.score) for hit in engine.search("idx", body).hits])
    return found


def become_writer(engine: EmbeddedEngine) -> None:
    """A write that changes no vector: the process takes the writer lock and catches the index up."""
    assert not engine.bulk("idx", [BulkAction("index", "plain", {"tag": "plain"})]).failed


def copies_of(engine: EmbeddedEngine) -> FloatCopies:
    return next(iter(engine._shared._handles.values())).vectors["v"].copies


def rows_and_vectors(store: Store) -> tuple[list[int], np.ndarray[Any, Any]]:
    record = store.index("idx")
    assert record is not None
    rows = [row for (row,) in store.db.execute("SELECT row FROM docs WHERE index_id = ?", (record.id,))]
    found = store.vector_blobs(sorted(rows), "v")
    matrix = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32).reshape(len(found), DIMENSION)
    return [row for row, _ in found], matrix


def finish(engine: EmbeddedEngine) -> None:
    for thread, _ in list(engine._shared._backfills._running.values()):
        thread.join(30)
    assert not engine._shared._backfills._running


def complete(root: Path) -> bool:
    markers = list((root / "vectors").glob("*.f32.complete"))
    assert len(markers) <= 1
    return bool(markers)


def at_small_scale(monkeypatch: Any) -> None:
    """The graph proposes candidates (as at scale, not an exact scan) and the back-fill writes small pages."""
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)
    monkeypatch.setattr(backfill, "PAGE", 16)


def indexed(root: Path, *, per_request: int = ROWS) -> None:
    """An index ``idx`` of ROWS vectors written by a writer that closed."""
    engine = EmbeddedEngine(root)
    engine.create_index("idx", MAPPING)
    actions = [BulkAction("index", f"d{i}", {"tag": "t", "v": v.tolist()}) for i, v in enumerate(vectors(ROWS))]
    for start in range(0, ROWS, per_request):
        assert not engine.bulk("idx", actions[start : start + per_request]).failed
    engine.close()


def mapping(*, approximate: bool) -> dict[str, Any]:
    settings = {"index": {"knn": True}} if approximate else {}
    return {
        "settings": settings,
        "mappings": {
            "properties": {
                "title": {"type": "text", "analyzer": "english"},
                "body": {"type": "text", "analyzer": "english"},
                "tag": {"type": "keyword"},
                "n": {"type": "integer"},
                "v": {"type": "knn_vector", "dimension": DIMENSION, "method": {"space_type": "cosinesimil"}},
            }
        },
    }


def points(count: int, seed: int = 0) -> np.ndarray[Any, np.dtype[np.float32]]:
    rng = np.random.default_rng(seed)
    found: np.ndarray[Any, np.dtype[np.float32]] = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    return found


def load(engine: EmbeddedEngine, index: str, vectors: np.ndarray[Any, Any], prefix: str = "d") -> None:
    actions = [
        BulkAction("index", f"{prefix}{i}", {"tag": "rare" if i % 50 == 0 else "common", "n": i, "v": v.tolist()})
        for i, v in enumerate(vectors)
    ]
    for start in range(0, len(actions), 200):
        assert not engine.bulk(index, actions[start : start + 200]).failed


def knn(vector: Any, k: int, **extra: Any) -> dict[str, Any]:
    return {"size": k, "query": {"knn": {"v": {"vector": [float(x) for x in vector], "k": k, **extra}}}}
