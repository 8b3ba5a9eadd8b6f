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

Scoring (see docs/query-stages.md): seed ``s`` gives each neighbor it keeps ``score(s) * weight *
decay ** (hops - 1)``; a neighbor's raw score is the sum over its seeds, times the optional prior
multiplier. With ``placement="below_seeds"`` (the default) that is its score, capped just below the
weakest seed that brought it in: a neighbor never outranks a document it neighbors, but can outrank
weaker direct results. With ``placement="below_all"`` the raw score is placed strictly below the lowest
direct score ``m`` (``m * raw / (m + raw)`` when ``m > 0``): neighbors then only fill the places direct
results leave, which with each retriever asked for ``2 x top_n`` is rarely any.

``build_graph``, ``graph_stats`` and ``neighborhood`` serve ``esbridge graph stats`` and ``esbridge
graph neighbors`` on the whole index's ``{doc_id: links}``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx

from esbridge.ingest.model import chunk_id

Direction = Literal["out", "in", "both"]
Prior = Literal["none", "degree", "pagerank"]
Placement = Literal["below_seeds", "below_all"]

LinkMap = Mapping[str, Sequence[str]]
"""``{doc_id: doc ids it links to}``: each document's ``links`` field (every chunk of a document has the same)."""

DIRECTIONS: tuple[Direction, ...] = ("out", "in", "both")
PRIORS: tuple[Prior, ...] = ("none", "degree", "pagerank")
PLACEMENTS: tuple[Placement, ...] = ("below_seeds", "below_all")
LINK_FIELDS = ("doc_id", "links")
"""The ``_source`` fields the link requests need."""


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

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ValueError(f"graph seeds must be >= 1, got {self.seeds}")
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


@dataclass(frozen=True)
class GraphExpansion:
    """The extra ranked list (item -> score, best first, ties by id) and the explanation of each entry."""

    scores: dict[str, float]
    neighbors: dict[str, Neighbor]

    @property
    def doc_of(self) -> dict[str, str]:
        return {item: neighbor.doc_id for item, neighbor in self.neighbors.items()}


def first_chunk(doc_id: str) -> str:
    """The item a neighbor document enters the list as: its chunk 0, which every document has."""
    return chunk_id(doc_id, 0)


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


def link_map(sources: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """``{doc_id: links}`` from hits' ``_source`` (several chunks of one document are merged)."""
    merged: dict[str, dict[str, None]] = {}
    for source in sources:
        targets = source.get("links") or []
        if isinstance(targets, str):
            targets = [targets]
        merged.setdefault(str(source["doc_id"]), {}).update(dict.fromkeys(str(target) for target in targets))
    return {doc_id: list(targets) for doc_id, targets in merged.items()}


def build_graph(links: LinkMap) -> nx.DiGraph:
    """Every document named (as key or link target) is a node; ``a -> b`` for each ``b`` in ``links[a]``.

    Self-links are dropped: they add nothing a search could use.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(links)
    for doc_id, targets in links.items():
        graph.add_edges_from((doc_id, target) for target in targets if target != doc_id)
    return graph


def prior_values(graph: nx.DiGraph, kind: Prior) -> dict[str, float]:
    """Degree (in + out) or PageRank of every node, divided by the largest, so in [0, 1]; {} for ``none``."""
    if kind == "none" or graph.number_of_nodes() == 0:
        return {}
    measure = dict(graph.degree()) if kind == "degree" else nx.pagerank(graph)
    values = {str(node): float(value) for node, value in measure.items()}
    top = max(values.values())
    return {node: value / top if top > 0 else 0.0 for node, value in values.items()}


def frontier(
    scores: Mapping[str, float], doc_of: Mapping[str, str], links: LinkMap | nx.DiGraph, options: GraphOptions
) -> list[str]:
    """The documents whose link data a 2-hop expansion needs next (query them with ``link_query``).

    These are the 1-hop documents of the seeds that still have room for 2-hop neighbors (fewer than
    ``per_seed`` new 1-hop ones), other than the seeds themselves; [] for 1 hop.
    """
    if options.hops < 2:
        return []
    best = best_items(scores, doc_of)
    seeds = seed_docs(scores, doc_of, options)
    view = _directed(_as_graph(links), options.direction)
    wanted: set[str] = set()
    for seed in seeds:
        if seed not in view:
            continue
        first = {str(doc_id) for doc_id in view.neighbors(seed)}
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
) -> GraphExpansion:
    """The neighbors of the seed documents as an extra ranked list, placed as ``options.placement`` says.

    ``scores`` are the fused scores of the directly retrieved items, ``doc_of`` their documents, ``links``
    the link data fetched for the seeds (and the frontier, for 2 hops). Documents with a direct result
    are never neighbors. ``prior`` (values in [0, 1], e.g. ``prior_values`` of the whole index's graph)
    replaces the prior computed on the fetched graph when ``options.prior`` is on. A neighbor document
    enters the list as ``item_of(doc_id)``, by default its first chunk.
    """
    options = options or GraphOptions()
    best = best_items(scores, doc_of)
    seeds = seed_docs(scores, doc_of, options)
    if not seeds:
        return GraphExpansion({}, {})
    graph = _as_graph(links)
    boost = _prior_multiplier(graph, options, prior)
    view = _directed(graph, options.direction)

    total: dict[str, float] = {}
    via: dict[str, dict[str, int]] = {}
    for seed in seeds:
        item, score = best[seed]
        for doc_id, hops in _kept_neighbors(view, seed, best, options, boost):
            total[doc_id] = total.get(doc_id, 0.0) + score * options.weight * options.decay ** (hops - 1)
            via.setdefault(doc_id, {})[item] = hops

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
        neighbors[item] = Neighbor(doc_id, min(via[doc_id].values()), via[doc_id], raw, boost(doc_id))
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


@dataclass(frozen=True)
class GraphStats:
    """What ``esbridge graph stats`` shows. Components are weakly connected (links followed either way)."""

    nodes: int
    edges: int
    density: float
    components: int
    largest_component: int
    top_degree: tuple[tuple[str, int], ...]
    top_pagerank: tuple[tuple[str, float], ...]


def graph_stats(graph: nx.DiGraph, top: int = 10) -> GraphStats:
    """Size, density, components and the ``top`` nodes by degree (in + out) and by PageRank (ties by id)."""
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    sizes = [len(component) for component in nx.weakly_connected_components(graph)]
    degree = {str(node): int(value) for node, value in graph.degree()}
    pagerank = {str(node): float(value) for node, value in nx.pagerank(graph).items()} if degree else {}
    return GraphStats(
        nodes=int(graph.number_of_nodes()),
        edges=int(graph.number_of_edges()),
        density=float(nx.density(graph)),
        components=len(sizes),
        largest_component=max(sizes, default=0),
        top_degree=tuple(sorted(degree.items(), key=_best_first)[:top]),
        top_pagerank=tuple(sorted(pagerank.items(), key=_best_first)[:top]),
    )


@dataclass(frozen=True)
class Neighborhood:
    """Documents around ``doc_id`` with their distance in hops, nearest first, then by id."""

    doc_id: str
    outgoing: dict[str, int]
    """Reached by following links from ``doc_id``."""
    incoming: dict[str, int]
    """Reaching ``doc_id`` by following links."""


def neighborhood(graph: nx.DiGraph, doc_id: str, hops: int = 1) -> Neighborhood:
    """What ``esbridge graph neighbors ID`` shows."""
    if hops < 1:
        raise ValueError(f"hops must be >= 1, got {hops}")
    if doc_id not in graph:
        raise ValueError(f"{doc_id!r} is not a document of the graph")
    return Neighborhood(
        doc_id,
        _distances(_directed(graph, "out"), doc_id, hops),
        _distances(_directed(graph, "in"), doc_id, hops),
    )


def _as_graph(links: LinkMap | nx.DiGraph) -> nx.DiGraph:
    return links if isinstance(links, nx.DiGraph) else build_graph(links)


def _directed(graph: nx.DiGraph, direction: Direction) -> nx.Graph:
    """A view in which a node's neighbors are the ones ``direction`` reaches in one hop."""
    if direction == "out":
        return graph
    if direction == "in":
        return graph.reverse(copy=False)
    return graph.to_undirected(as_view=True)


def _distances(view: nx.Graph, source: str, hops: int) -> dict[str, int]:
    reach = nx.single_source_shortest_path_length(view, source, cutoff=hops)
    found = [(str(node), int(distance)) for node, distance in reach.items() if node != source]
    return dict(sorted(found, key=lambda entry: (entry[1], entry[0])))


def _kept_neighbors(
    view: nx.Graph,
    seed: str,
    direct: Mapping[str, object],
    options: GraphOptions,
    boost: Callable[[str], float],
) -> list[tuple[str, int]]:
    if seed not in view:
        return []
    found = [(doc_id, hops) for doc_id, hops in _distances(view, seed, options.hops).items() if doc_id not in direct]
    found.sort(key=lambda entry: (entry[1], -boost(entry[0]), entry[0]))
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
