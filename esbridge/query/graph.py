"""Graph-neighbor expansion: documents linked to or from the top results join the list, below them.

The graph is one of documents: an edge ``a -> b`` when ``b`` is in the ``links`` field of ``a``. The
orchestrator does the engine requests; everything here is pure:

1. ``seed_docs(scores, doc_of, options)``: the documents to expand.
2. One search with ``link_query(seeds, options.direction)``, source fields ``LINK_FIELDS``; its hits'
   ``_source`` become a ``LinkMap`` with ``link_map(...)``.
3. With ``hops=2`` only: ``frontier(scores, doc_of, links, options)`` names the documents to query the
   same way next; merge the second ``LinkMap`` into the first (``{**first, **second}``).
4. ``expand(scores, doc_of, links, options)``: the neighbors' ranked list and why each is there;
   ``with_neighbors(scores, expansion)`` is the combined list.

Links may carry weights (``link_weights``; a link without one weighs 1). Links lighter than
``min_link_weight`` are not followed. Each seed keeps its ``per_seed`` nearest neighbors, the most
strongly tied first: a neighbor's strength is its link's weight over the heaviest link of the seed
(over the path, for 2 hops: the product of the two), so it is in (0, 1] whatever the weights' scale.

Scoring (see docs/query-stages.md): seed ``s`` gives each neighbor it keeps ``score(s) * weight *
decay ** (hops - 1)``, times the neighbor's strength when ``link_weighting="proportional"``; a
neighbor's raw score is the sum over its seeds, times the optional prior multiplier. With
``placement="below_seeds"`` (the default) that is its score, capped just below the weakest seed that
brought it in: a neighbor never outranks a document it neighbors, but can outrank weaker direct
results. With ``placement="below_all"`` the raw score is placed strictly below the lowest direct score
``m`` (``m * raw / (m + raw)`` when ``m > 0``): neighbors then only fill the places direct results
leave, which with each retriever asked for ``2 x top_n`` is rarely any.

The link data and the graph itself are ``esbridge.query.link_graph``'s.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx

from esbridge.ids import first_chunk
from esbridge.query.link_graph import (
    DIRECTIONS,
    PRIORS,
    Direction,
    LinkMap,
    Prior,
    adjacent,
    build_graph,
    prior_values,
)

Placement = Literal["below_seeds", "below_all"]
Weighting = Literal["none", "proportional"]
Mode = Literal["expand", "rescore", "lift"]

PLACEMENTS: tuple[Placement, ...] = ("below_seeds", "below_all")
WEIGHTINGS: tuple[Weighting, ...] = ("none", "proportional")
MODES: tuple[Mode, ...] = ("expand", "rescore", "lift")


@dataclass(frozen=True)
class GraphOptions:
    """How far and how wide to expand, and how much a neighbor is worth."""

    seeds: int = 5
    """How many top documents (by their best item) are expanded."""
    hops: int = 1
    """1: direct neighbors; 2: also their neighbors (needs the ``frontier`` request)."""
    per_seed: int = 5
    """At most this many neighbors kept per seed: nearest first, then higher prior, then doc id."""
    direction: Direction = "both"
    """``out``: documents a seed links to; ``in``: documents linking to it; ``both``: either, at every hop."""
    weight: float = 0.5
    """A 1-hop neighbor's share of its seed's score; 0 turns expansion off."""
    decay: float = 0.5
    """Factor per hop beyond the first."""
    prior: Prior = "none"
    """Static prior: a multiplier ``1 + prior_weight * p`` with ``p`` in [0, 1] from degree or PageRank."""
    prior_weight: float = 0.1
    placement: Placement = "below_seeds"
    """``below_seeds``: a neighbor scores its raw score, below the seeds that brought it in; ``below_all``:
    below every direct result."""
    min_link_weight: float = 0.0
    """Links that weigh less are not followed (a link without a weight weighs 1)."""
    link_weighting: Weighting = "none"
    """``proportional``: a neighbor's share is also multiplied by its strength (see the module docstring)."""
    mode: Mode = "expand"
    """``expand``: neighbors join the list; ``rescore``: the direct results are re-scored by their links to
    each other and nothing joins; ``lift``: only the direct results below the first ``keep_top`` documents
    are re-scored, by their links to the top ``seeds`` (``esbridge.query.link_rescore``)."""
    rescore_weight: float = 0.5
    """``rescore`` and ``lift``: how much of the linked results' scores a result gains."""
    keep_top: int = 10
    """``lift`` only: how many of the best documents keep their places (nothing is lifted above them)."""

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ValueError(f"graph seeds must be >= 1, got {self.seeds}")
        if self.keep_top < 1:
            raise ValueError(f"graph keep_top must be >= 1, got {self.keep_top}")
        if self.per_seed < 1:
            raise ValueError(f"graph per_seed must be >= 1, got {self.per_seed}")
        if self.hops not in (1, 2):
            raise ValueError(f"graph hops must be 1 or 2, got {self.hops}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"graph direction must be one of {', '.join(DIRECTIONS)}, got {self.direction!r}")
        if self.prior not in PRIORS:
            raise ValueError(f"graph prior must be one of {', '.join(PRIORS)}, got {self.prior!r}")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise ValueError(f"graph weight must be a finite number >= 0, got {self.weight}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"graph decay must be in (0, 1], got {self.decay}")
        if not (math.isfinite(self.prior_weight) and self.prior_weight >= 0):
            raise ValueError(f"graph prior_weight must be a finite number >= 0, got {self.prior_weight}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"graph placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")
        if not (math.isfinite(self.min_link_weight) and self.min_link_weight >= 0):
            raise ValueError(f"graph min_link_weight must be a finite number >= 0, got {self.min_link_weight}")
        if self.mode not in MODES:
            raise ValueError(f"graph mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not (math.isfinite(self.rescore_weight) and self.rescore_weight >= 0):
            raise ValueError(f"graph rescore_weight must be a finite number >= 0, got {self.rescore_weight}")
        if self.link_weighting not in WEIGHTINGS:
            raise ValueError(
                f"graph link_weighting must be one of {', '.join(WEIGHTINGS)}, got {self.link_weighting!r}"
            )


@dataclass(frozen=True)
class Neighbor:
    """Why a neighbor is in the list."""

    doc_id: str
    hops: int
    """Fewest hops from any seed that kept it."""
    neighbor_of: dict[str, int]
    """The direct results (each seed's best item) it neighbors, best seed first, with the hops from each."""
    raw: float
    """Sum of the seeds' contributions times ``prior``, before placement (``GraphOptions.placement``)."""
    prior: float
    """The prior multiplier (1.0 when the prior is off)."""
    strength: float = 1.0
    """How strongly it is tied to its best seed, in (0, 1]: its link's weight over the seed's heaviest."""


@dataclass(frozen=True)
class GraphExpansion:
    """The extra ranked list (item -> score, best first, ties by id) and the explanation of each entry."""

    scores: dict[str, float]
    neighbors: dict[str, Neighbor]

    @property
    def doc_of(self) -> dict[str, str]:
        return {item: neighbor.doc_id for item, neighbor in self.neighbors.items()}


def best_items(scores: Mapping[str, float], doc_of: Mapping[str, str]) -> dict[str, tuple[str, float]]:
    """``{doc_id: (its best item, that score)}``, best document first; equal scores by item id."""
    best: dict[str, tuple[str, float]] = {}
    for item, score in sorted(scores.items(), key=_best_first):
        if not math.isfinite(score):
            raise ValueError(f"score of {item!r} is not a finite number: {score}")
        doc_id = doc_of.get(item)
        if doc_id is None:
            raise ValueError(f"no doc_id given for item {item!r}")
        best.setdefault(doc_id, (item, score))
    return best


def seed_docs(scores: Mapping[str, float], doc_of: Mapping[str, str], options: GraphOptions) -> list[str]:
    """The top ``options.seeds`` documents with a positive score: a score <= 0 has nothing to pass on."""
    if options.weight == 0:
        return []
    return [doc_id for doc_id, (_, score) in best_items(scores, doc_of).items() if score > 0][: options.seeds]


def link_query(doc_ids: Iterable[str], direction: Direction) -> dict[str, Any]:
    """The query finding the link data of ``doc_ids``: their own ``links`` (out), the documents linking to them (in).

    The same body works on Elasticsearch and OpenSearch. Skip the request when ``doc_ids`` is empty.
    """
    ids = sorted(set(doc_ids))
    own: dict[str, Any] = {"terms": {"doc_id": ids}}
    linking: dict[str, Any] = {"terms": {"links": ids}}
    if direction == "out":
        return own
    if direction == "in":
        return linking
    return {"bool": {"should": [own, linking], "minimum_should_match": 1}}


def frontier(
    scores: Mapping[str, float],
    doc_of: Mapping[str, str],
    links: LinkMap | nx.DiGraph,
    options: GraphOptions,
    *,
    exclude: Collection[str] = (),
) -> list[str]:
    """The documents whose link data a 2-hop expansion needs next (query them with ``link_query``).

    These are the 1-hop documents of the seeds that still have room for 2-hop neighbors (fewer than
    ``per_seed`` new 1-hop ones, not counting those in ``exclude``, as ``expand`` keeps none of them),
    other than the seeds and ``exclude``; [] for 1 hop.
    """
    if options.hops < 2:
        return []
    best = best_items(scores, doc_of)
    seeds = seed_docs(scores, doc_of, options)
    graph = _as_graph(links)
    wanted: set[str] = set()
    for seed in seeds:
        first = set(adjacent(graph, seed, options.direction, options.min_link_weight)).difference(exclude)
        if sum(1 for doc_id in first if doc_id not in best) < options.per_seed:
            wanted.update(first)
    return sorted(wanted.difference(seeds))


def expand(
    scores: Mapping[str, float],
    doc_of: Mapping[str, str],
    links: LinkMap | nx.DiGraph,
    options: GraphOptions | None = None,
    *,
    prior: Mapping[str, float] | None = None,
    item_of: Callable[[str], str] = first_chunk,
    exclude: Collection[str] = (),
) -> GraphExpansion:
    """The neighbors of the seed documents as an extra ranked list, placed as ``options.placement`` says.

    ``scores`` are the fused scores of the directly retrieved items, ``doc_of`` their documents, ``links``
    the link data fetched for the seeds (and the frontier, for 2 hops). Documents with a direct result
    are never neighbors. ``prior`` (values in [0, 1], e.g. ``prior_values`` of the whole index's graph)
    replaces the prior computed on the fetched graph when ``options.prior`` is on. A neighbor document
    enters the list as ``item_of(doc_id)``, by default its first chunk. Documents in ``exclude`` (missing
    from the index, or filtered out) are never kept, so they take no seed's place under ``per_seed``; the
    links to them still count for the strengths.
    """
    options = options or GraphOptions()
    best = best_items(scores, doc_of)
    seeds = seed_docs(scores, doc_of, options)
    if not seeds:
        return GraphExpansion({}, {})
    graph = _as_graph(links)
    boost = _prior_multiplier(graph, options, prior)
    proportional = options.link_weighting == "proportional"
    step = _stepper(graph, options)

    total: dict[str, float] = {}
    via: dict[str, dict[str, int]] = {}
    strongest: dict[str, float] = {}
    for seed in seeds:
        item, score = best[seed]
        for doc_id, (hops, strength) in _kept_neighbors(graph, seed, best.keys() | exclude, options, boost, step):
            share = score * options.weight * options.decay ** (hops - 1) * (strength if proportional else 1.0)
            total[doc_id] = total.get(doc_id, 0.0) + share
            via.setdefault(doc_id, {})[item] = hops
            strongest[doc_id] = max(strength, strongest.get(doc_id, 0.0))

    lowest, unit = _band(scores.values())
    neighbors: dict[str, Neighbor] = {}
    placed: dict[str, float] = {}
    for doc_id, contribution in total.items():
        raw = contribution * boost(doc_id)
        if not raw > 0:  # underflow of tiny scores
            continue
        item = item_of(doc_id)
        if item in scores or item in neighbors:
            raise ValueError(f"neighbor {doc_id!r} maps to item {item!r}, which is already in the list")
        if options.placement == "below_all":
            placed_score = place_below(raw, lowest, unit)
        else:
            weakest_seed = min(scores[seed_item] for seed_item in via[doc_id])
            placed_score = min(raw, math.nextafter(weakest_seed, -math.inf))
            if not placed_score > 0:  # a seed at the smallest positive float leaves no room below it
                continue
        neighbors[item] = Neighbor(
            doc_id, min(via[doc_id].values()), via[doc_id], raw, boost(doc_id), strongest[doc_id]
        )
        placed[item] = placed_score
    order = sorted(placed.items(), key=_best_first)
    return GraphExpansion(dict(order), {item: neighbors[item] for item, _ in order})


def place_below(raw: float, lowest: float, unit: float) -> float:
    """A score strictly below ``lowest`` that grows with ``raw`` > 0.

    ``lowest > 0``: ``lowest * raw / (lowest + raw)``, i.e. ``1/score = 1/lowest + 1/raw``, in (0, lowest)
    and about ``raw`` when ``raw`` is small. Otherwise ``lowest - unit**2 / (unit + raw)``, in
    ``(lowest - unit, lowest)``: the same formula shifted, as there is no room between 0 and ``lowest``.
    """
    value = lowest / (1.0 + lowest / raw) if lowest > 0 else lowest - unit / (1.0 + raw / unit)
    return min(value, math.nextafter(lowest, -math.inf))


def with_neighbors(scores: Mapping[str, float], expansion: GraphExpansion) -> dict[str, float]:
    """Direct results and neighbors in one list, best first (ties by id)."""
    return dict(sorted({**scores, **expansion.scores}.items(), key=_best_first))


def _as_graph(links: LinkMap | nx.DiGraph) -> nx.DiGraph:
    return links if isinstance(links, nx.DiGraph) else build_graph(links)


def reach(
    graph: nx.DiGraph,
    seed: str,
    options: GraphOptions,
    step: Callable[[str], Mapping[str, float]] | None = None,
) -> dict[str, tuple[int, float]]:
    """``{doc_id: (hops, strength)}`` of the documents within ``options.hops`` of ``seed``; the strength of a
    1-hop neighbor is its link's weight over the seed's heaviest link, of a 2-hop one the best product
    along a path through a 1-hop neighbor. ``step`` (one hop's strengths from a node) may be shared by
    the seeds of one expansion, which meet the same documents on the way."""
    step = step or _stepper(graph, options)
    first = step(seed)
    found = {doc_id: (1, strength) for doc_id, strength in first.items()}
    if options.hops < 2:
        return found
    for middle, strength in first.items():
        for doc_id, onward in step(middle).items():
            if doc_id == seed or doc_id in first:
                continue
            if doc_id not in found or strength * onward > found[doc_id][1]:
                found[doc_id] = (2, strength * onward)
    return found


def _stepper(graph: nx.DiGraph, options: GraphOptions) -> Callable[[str], Mapping[str, float]]:
    @functools.cache
    def step(node: str) -> Mapping[str, float]:
        return _strengths(adjacent(graph, node, options.direction, options.min_link_weight))

    return step


def _strengths(weights: Mapping[str, float]) -> dict[str, float]:
    heaviest = max(weights.values(), default=1.0)
    return {doc_id: weight / heaviest for doc_id, weight in weights.items()}


def _kept_neighbors(
    graph: nx.DiGraph,
    seed: str,
    left_out: Collection[str],
    options: GraphOptions,
    boost: Callable[[str], float],
    step: Callable[[str], Mapping[str, float]],
) -> list[tuple[str, tuple[int, float]]]:
    """The ``per_seed`` neighbors of ``seed`` not ``left_out`` (direct results, excluded documents): nearest,
    strongest, higher prior, by id."""
    found = [(doc_id, entry) for doc_id, entry in reach(graph, seed, options, step).items() if doc_id not in left_out]
    found.sort(key=lambda pair: (pair[1][0], -pair[1][1], -boost(pair[0]), pair[0]))
    return found[: options.per_seed]


def _prior_multiplier(
    graph: nx.DiGraph, options: GraphOptions, given: Mapping[str, float] | None
) -> Callable[[str], float]:
    if options.prior == "none":
        return lambda _doc_id: 1.0
    values = dict(given) if given is not None else prior_values(graph, options.prior)
    for doc_id, value in values.items():
        if not 0 <= value <= 1:
            raise ValueError(f"prior of {doc_id!r} must be in [0, 1], got {value}")
    return lambda doc_id: 1.0 + options.prior_weight * values.get(doc_id, 0.0)


def _band(scores: Iterable[float]) -> tuple[float, float]:
    """The lowest direct score and the width of the band below it that neighbors may use when it is <= 0."""
    values = list(scores)
    lowest = min(values)
    spread = max(values) - lowest
    unit = lowest if lowest > 0 else spread if spread > 0 and math.isfinite(spread) else 1.0
    return lowest, unit


def _best_first(entry: tuple[str, float]) -> tuple[float, str]:
    return -entry[1], entry[0]
