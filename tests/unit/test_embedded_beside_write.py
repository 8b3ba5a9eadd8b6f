"""Searches beside a bulk write of the same process: they do not wait for it, and still see every write that
returned before them.

A search that began after a bulk request's transaction committed caught up with the request itself: it waited
for the request's refresh to take the documents into tantivy (under the data directory's lock) and then
committed them, so at a million chunks searches beside a 2,000-chunk request waited up to 2-3 s."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, catch_up, datadir
from tests.support.embedded_index import load, mapping, points

WORD = "zebra"


def _ids(engine: EmbeddedEngine, query: dict[str, Any]) -> set[str]:
    return {hit.id for hit in engine.search("idx", {"size": 50, "query": query}).hits}


def _lexical(engine: EmbeddedEngine) -> set[str]:
    return _ids(engine, {"match": {"body": WORD}})


NEAR = points(1, seed=9)[0]


def _knn(engine: EmbeddedEngine) -> set[str]:
    return _ids(engine, {"knn": {"v": {"vector": NEAR.tolist(), "k": 5}}})


def _filtered(engine: EmbeddedEngine) -> set[str]:
    return _ids(engine, {"bool": {"filter": [{"term": {"tag": "rare"}}], "must_not": [{"match": {"body": WORD}}]}})


def _documents(prefix: str, count: int) -> list[BulkAction]:
    return [
        BulkAction("index", f"{prefix}{i}", {"body": f"a {WORD} note", "tag": "rare", "v": (NEAR + 0.001 * i).tolist()})
        for i in range(count)
    ]


class HeldRefresh:
    """Holds the next bulk write in its refresh, where it takes its documents into tantivy, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        apply_text = catch_up.apply_text

        def held(*args: Any, **options: Any) -> None:
            if not self.inside.is_set():
                self.inside.set()
                assert self.release.wait(30)
            apply_text(*args, **options)

        monkeypatch.setattr(catch_up, "apply_text", held)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    opened = EmbeddedEngine(tmp_path)
    opened.create_index("idx", mapping(approximate=True))
    load(opened, "idx", points(120))
    try:
        yield opened
    finally:
        opened.close()


def _beside(engine: EmbeddedEngine, held: HeldRefresh, write: list[BulkAction]) -> dict[str, set[str]]:
    """What searches from another thread find while ``write`` is held in its refresh; fails if they waited."""
    writer = threading.Thread(target=lambda: engine.bulk("idx", write))
    writer.start()
    assert held.inside.wait(30)
    found: dict[str, set[str]] = {}
    searcher = threading.Thread(
        target=lambda: found.update(lexical=_lexical(engine), knn=_knn(engine), filtered=_filtered(engine))
    )
    searcher.start()
    searcher.join(10)
    waited = searcher.is_alive()
    held.release.set()
    searcher.join(30)
    writer.join(30)
    assert not waited, "the searches waited for the write under way"
    return found


def test_a_search_beside_a_bulk_write_does_not_wait_for_it(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {"lexical": _lexical(engine), "knn": _knn(engine), "filtered": _filtered(engine)}
    held = HeldRefresh(monkeypatch)

    found = _beside(engine, held, _documents("new", 5))

    assert found["lexical"] == before["lexical"] == set()  # the write had not returned: not seen, not waited for
    assert found["filtered"] == before["filtered"]
    assert _lexical(engine) == {f"new{i}" for i in range(5)}  # returned: seen
    assert _filtered(engine) == before["filtered"]
    assert _knn(engine) == {f"new{i}" for i in range(5)}


def test_a_search_beside_a_write_sees_the_writes_that_returned_before_it(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier write large enough to leave its text uncommitted when it returned is committed by the search."""
    monkeypatch.setattr(datadir, "COMMIT_AT_ONCE_BELOW", 3)
    monkeypatch.setattr(datadir, "COMMIT_AFTER_S", 60.0)
    assert not engine.bulk("idx", _documents("earlier", 5)).failed
    held = HeldRefresh(monkeypatch)

    found = _beside(engine, held, _documents("later", 2))

    assert found["lexical"] == {f"earlier{i}" for i in range(5)}
    assert _lexical(engine) == {f"earlier{i}" for i in range(5)} | {"later0", "later1"}
