"""Graph expansion's requests to the engine (``link_query``, ``link_map``, ``frontier``), checked by hand, and
properties of expansion over random link data: neighbours stay below what they must, and the requests fetch
all that expanding over the whole graph would use."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.query.graph import GraphOptions, expand, frontier, link_query, seed_docs, with_neighbors
from esbridge.query.link_graph import LINK_FIELDS, link_map
from esbridge.query.shaping import ShapeOptions, shape
from tests.unit.query.graph_examples import LINKS, SCORES, docs_of


def test_link_query_per_direction() -> None:
    assert link_query(["B", "A", "A"], "out") == {"terms": {"doc_id": ["A", "B"]}}
    assert link_query(["A"], "in") == {"terms": {"links": ["A"]}}
    assert link_query(["A"], "both") == {
        "bool": {"should": [{"terms": {"doc_id": ["A"]}}, {"terms": {"links": ["A"]}}], "minimum_should_match": 1}
    }
    assert LINK_FIELDS == ("doc_id", "links", "link_weights")


def test_link_map_merges_the_chunks_of_a_document() -> None:
    sources: list[dict[str, Any]] = [
        {"doc_id": "A", "links": ["X", "B"]},
        {"doc_id": "A", "links": ["B", "Y"]},
        {"doc_id": "Z", "links": "A"},
        {"doc_id": "Q"},
        {"doc_id": "R", "links": None},
    ]
    assert link_map(sources) == {"A": {"X": 1.0, "B": 1.0, "Y": 1.0}, "Z": {"A": 1.0}, "Q": {}, "R": {}}


def test_link_map_reads_weights_and_takes_a_bad_one_as_1() -> None:
    sources: list[dict[str, Any]] = [
        {"doc_id": "A", "links": ["X", "B", "C"], "link_weights": {"X": 3, "B": -1, "C": "heavy"}},
        {"doc_id": "A", "links": ["X"], "link_weights": {"X": 2.5}},
        {"doc_id": "Z", "links": ["A"], "link_weights": ["not", "a", "map"]},
    ]
    assert link_map(sources) == {"A": {"X": 3.0, "B": 1.0, "C": 1.0}, "Z": {"A": 1.0}}


def test_link_map_takes_a_single_number_as_one_link_and_leaves_out_a_chunk_without_doc_id() -> None:
    # Stored as a cluster keeps them (imported, or written by another tool): `esbridge graph stats` and
    # `search --graph` once stopped with a traceback (TypeError: 'int' object is not iterable, KeyError: 'doc_id').
    sources: list[dict[str, Any]] = [
        {"doc_id": "A", "links": 42},
        {"doc_id": "B", "links": {"X": 1}},
        {"doc_id": "C", "links": True},
        {"links": ["A"]},
    ]
    assert link_map(sources) == {"A": {"42": 1.0}, "B": {}, "C": {}}


def test_frontier_names_the_one_hop_documents_of_seeds_with_room() -> None:
    scores, doc_of = SCORES, docs_of(SCORES)
    seeds_data = {"A": ["X", "B"], "B": ["Y"]}
    two_hops = GraphOptions(seeds=2, hops=2, direction="out")
    assert frontier(scores, doc_of, seeds_data, two_hops) == ["X", "Y"]
    # Each seed already has per_seed new 1-hop neighbors: no 2-hop neighbor could be kept.
    full = GraphOptions(seeds=2, hops=2, direction="out", per_seed=1)
    assert frontier(scores, doc_of, seeds_data, full) == []
    assert frontier(scores, doc_of, seeds_data, GraphOptions(seeds=2, hops=1)) == []
    both = GraphOptions(seeds=2, hops=2)
    assert frontier(scores, doc_of, LINKS, both) == ["W", "X", "Y", "Z"]
    # A dropped neighbor (missing, filtered out) takes no room, and its links are not wanted.
    assert frontier(scores, doc_of, seeds_data, full, exclude={"X", "Y"}) == []
    one_seed = GraphOptions(seeds=1, hops=2, direction="out", per_seed=2)
    assert frontier(scores, doc_of, {"A": ["X", "Q"]}, one_seed) == []
    assert frontier(scores, doc_of, {"A": ["X", "Q"]}, one_seed, exclude={"X"}) == ["Q"]


def matches(query: Mapping[str, Any], doc_id: str, links: Sequence[str]) -> bool:
    """What the engine does with a ``link_query`` on one document."""
    if "bool" in query:
        return any(matches(clause, doc_id, links) for clause in query["bool"]["should"])
    ((field, wanted),) = query["terms"].items()
    values = [doc_id] if field == "doc_id" else list(links)
    return any(value in wanted for value in values)


def fetch(index: Mapping[str, Sequence[str]], doc_ids: Sequence[str], direction: Any) -> dict[str, dict[str, float]]:
    if not doc_ids:
        return {}
    query = link_query(doc_ids, direction)
    return link_map({"doc_id": doc, "links": list(links)} for doc, links in index.items() if matches(query, doc, links))


def test_the_requests_fetch_the_link_data_by_hand() -> None:
    index = {**LINKS, "C": ["Z"], "X": ["V"], "V": []}

    def targets(links: Mapping[str, Mapping[str, float]]) -> dict[str, list[str]]:
        return {doc_id: list(weights) for doc_id, weights in links.items()}

    assert targets(fetch(index, ["A", "B"], "both")) == {"A": ["X", "B"], "B": ["Y"], "Z": ["A"], "W": ["B", "A"]}
    assert targets(fetch(index, ["A"], "out")) == {"A": ["X", "B"]}
    assert targets(fetch(index, ["A"], "in")) == {"Z": ["A"], "W": ["B", "A"]}


# Properties.

DOCS = [f"d{index}" for index in range(8)]


@st.composite
def searches(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, str], dict[str, list[str]], GraphOptions]:
    index = {doc: draw(st.lists(st.sampled_from(DOCS), max_size=4, unique=True)) for doc in DOCS}
    direct = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=5, unique=True))
    scores: dict[str, float] = {}
    for doc in direct:
        for chunk in range(draw(st.integers(1, 2))):
            scores[f"{doc}#{chunk + 1}"] = draw(st.floats(-1.0, 100.0, allow_nan=False))
    options = GraphOptions(
        seeds=draw(st.integers(1, 4)),
        hops=draw(st.integers(1, 2)),
        per_seed=draw(st.integers(1, 4)),
        direction=draw(st.sampled_from(["out", "in", "both"])),
        weight=draw(st.floats(0.0, 3.0)),
        decay=draw(st.floats(0.01, 1.0)),
    )
    return scores, docs_of(scores), index, options


@given(searches())
@settings(max_examples=300, deadline=None)
def test_neighbors_never_outrank_direct_results_when_placed_below_all(search: Any) -> None:
    scores, doc_of, index, options = search
    expansion = expand(scores, doc_of, index, dataclasses.replace(options, placement="below_all"))
    direct_docs = set(doc_of.values())
    assert all(score < min(scores.values()) for score in expansion.scores.values())
    assert not direct_docs & {neighbor.doc_id for neighbor in expansion.neighbors.values()}
    assert len(expansion.scores) <= options.seeds * options.per_seed
    assert all(1 <= neighbor.hops <= options.hops for neighbor in expansion.neighbors.values())
    assert list(expansion.scores.values()) == sorted(expansion.scores.values(), reverse=True)

    merged = with_neighbors(scores, expansion)
    assert list(merged)[: len(scores)] == sorted(scores, key=lambda item: (-scores[item], item))
    shaped = shape(merged, ShapeOptions(top_n=20), doc_of={**doc_of, **expansion.doc_of})
    order = [item in expansion.scores for item in shaped]
    assert order == sorted(order)  # direct results (False) all before neighbors (True)


@given(searches())
@settings(max_examples=300, deadline=None)
def test_neighbors_never_outrank_the_seeds_that_brought_them_in(search: Any) -> None:
    scores, doc_of, index, options = search
    expansion = expand(scores, doc_of, index, dataclasses.replace(options, placement="below_seeds"))
    assert not set(doc_of.values()) & {neighbor.doc_id for neighbor in expansion.neighbors.values()}
    for item, score in expansion.scores.items():
        neighbor = expansion.neighbors[item]
        assert 0 < score <= neighbor.raw
        assert all(score < scores[seed] for seed in neighbor.neighbor_of)
    assert list(expansion.scores.values()) == sorted(expansion.scores.values(), reverse=True)
    shaped = shape(with_neighbors(scores, expansion), ShapeOptions(top_n=20), doc_of={**doc_of, **expansion.doc_of})
    assert len(shaped) == len(set(shaped)) <= 20


@given(searches())
@settings(max_examples=300, deadline=None)
def test_the_requests_give_the_same_expansion_as_the_whole_graph(search: Any) -> None:
    scores, doc_of, index, options = search
    links = fetch(index, seed_docs(scores, doc_of, options), options.direction)
    links = {**links, **fetch(index, frontier(scores, doc_of, links, options), options.direction)}
    assert expand(scores, doc_of, links, options) == expand(scores, doc_of, index, options)
