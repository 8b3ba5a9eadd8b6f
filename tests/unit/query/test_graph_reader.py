"""Graph expansion's link reads against the embedded engine: what a seed links to is found however many
documents link to the seed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.async_engine import AsyncEmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.graph import GraphOptions
from esbridge.query.graph_reader import LINKED_CHUNKS, Expanded, LinkReader
from esbridge.query.models import Filters

INDEX = "links-graph-reader"


def _chunk(doc_id: str, index: int = 0, links: list[str] | None = None, **fields: Any) -> tuple[str, dict[str, Any]]:
    chunk_id = f"{doc_id}#{index}"
    source = {"chunk_id": chunk_id, "doc_id": doc_id, "chunk_index": index, "title": doc_id, "links": links or []}
    return chunk_id, {**source, **fields}


def _load(engine: EmbeddedEngine, chunks: list[tuple[str, dict[str, Any]]]) -> None:
    IndexManager(engine, INDEX, IndexParameters(dimension=4)).create()
    result = engine.bulk(INDEX, [BulkAction("index", chunk_id, source) for chunk_id, source in chunks])
    assert list(result.failed) == []
    engine.refresh(INDEX)


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


@pytest.fixture
def engine(empty: EmbeddedEngine) -> EmbeddedEngine:
    # More documents link to the seed than one read returns, each in two chunks; they sort before it.
    fans = [_chunk(f"fan{n:04d}", part, ["seed"]) for n in range(LINKED_CHUNKS + 5) for part in (0, 1)]
    _load(empty, [*fans, _chunk("seed", 0, ["target"]), _chunk("seed", 1, ["target"]), _chunk("target")])
    return empty


def _expand(engine: EmbeddedEngine, options: GraphOptions, filters: Filters | None = None) -> Expanded:
    async def run() -> Expanded:
        reader = LinkReader(AsyncEmbeddedEngine(engine=engine), INDEX)
        return await reader.expand({"seed#0": 1.0}, {"seed#0": "seed"}, filters or Filters(), options)

    return asyncio.run(run())


@pytest.mark.parametrize("direction", ["out", "both"])
def test_a_seeds_own_links_are_followed_however_many_documents_link_to_it(
    engine: EmbeddedEngine, direction: str
) -> None:
    expanded = _expand(engine, GraphOptions(direction=direction, per_seed=1000))  # type: ignore[arg-type]
    assert "target#0" in expanded.expansion.scores
    if direction == "out":
        assert expanded.warnings == ()


def test_backlinks_are_read_one_chunk_per_document_in_id_order(engine: EmbeddedEngine) -> None:
    expanded = _expand(engine, GraphOptions(direction="in", per_seed=100))
    # 505 documents link to the seed: the first 500 by id are read, not 500 chunks of 250 of them.
    assert expanded.warnings == (
        f"graph expansion read {LINKED_CHUNKS} of the {LINKED_CHUNKS + 5} chunks linked with its seeds; "
        "some neighbours may be missing",
    )
    assert sorted(expanded.expansion.neighbors) == [f"fan{n:04d}#0" for n in range(100)]


def test_the_per_seed_cap_counts_only_neighbours_that_exist_and_pass_the_filters(empty: EmbeddedEngine) -> None:
    # By id, the seed's first links are to a deprecated document, one of another tag and one that is gone.
    _load(
        empty,
        [
            _chunk("seed", 0, ["a-old", "b-other", "c-gone", "d", "e", "f"], tags=["solar"]),
            _chunk("a-old", status="deprecated", tags=["solar"]),
            _chunk("b-other", tags=["wind"]),
            _chunk("d", tags=["solar"]),
            _chunk("e", tags=["solar"]),
            _chunk("f", tags=["solar"]),
        ],
    )
    expanded = _expand(empty, GraphOptions(direction="out", per_seed=2), Filters(terms={"tags": ["solar"]}))
    assert list(expanded.expansion.neighbors) == ["d#0", "e#0"]
    assert {item: expanded.sources[item]["doc_id"] for item in expanded.expansion.neighbors} == {"d#0": "d", "e#0": "e"}
    unfiltered = _expand(empty, GraphOptions(direction="out", per_seed=2))
    assert list(unfiltered.expansion.neighbors) == ["b-other#0", "d#0"]


def test_places_freed_by_dropped_neighbours_go_to_two_hop_neighbours(empty: EmbeddedEngine) -> None:
    # The seed's three links fill per_seed=3, but two lead to deprecated documents: their places go to the
    # next neighbours, two hops away through the one that stays.
    _load(
        empty,
        [
            _chunk("seed", 0, ["a-old", "b-old", "middle"]),
            _chunk("a-old", status="deprecated"),
            _chunk("b-old", status="deprecated"),
            _chunk("middle", 0, ["far", "further"]),
            _chunk("far"),
            _chunk("further"),
        ],
    )
    expanded = _expand(empty, GraphOptions(direction="out", hops=2, per_seed=3))
    assert expanded.expansion.scores == {"middle#0": 0.5, "far#0": 0.25, "further#0": 0.25}
    assert set(expanded.sources) == {"middle#0", "far#0", "further#0"}
