"""The link graph of an index: ``{doc_id: {target: weight}}`` from stored links, as a networkx graph.

``link_map`` reads hits' ``links`` and ``link_weights``; ``build_graph`` makes the directed graph
(``a -> b`` with the link's weight); ``adjacent`` is one hop in a direction. ``graph_stats`` and
``neighborhood`` serve ``esbridge graph stats`` and ``esbridge graph neighbors``; graph expansion
(``esbridge.query.graph``) walks the same graph from a search's top results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx

Direction = Literal["out", "in", "both"]
Prior = Literal["none", "degree", "pagerank"]

LinkMap = Mapping[str, Sequence[str] | Mapping[str, float]]
"""``{doc_id: doc ids it links to}``, or ``{doc_id: {doc id: weight}}``: each document's ``links`` field
(every chunk of a document has the same), with its ``link_weights``."""

DIRECTIONS: tuple[Direction, ...] = ("out", "in", "both")
PRIORS: tuple[Prior, ...] = ("none", "degree", "pagerank")
LINK_FIELDS = ("doc_id", "links", "link_weights")
"""The ``_source`` fields the link requests need."""


def link_map(sources: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{doc_id: {target: weight}}`` from hits' ``_source`` (several chunks of one document are merged).

    A target without an entry in ``link_weights`` weighs 1; a weight that is not a positive number is
    stored data gone wrong, and the link is then taken to weigh 1 rather than dropped. ``links`` may be one
    value instead of a list; a source without a ``doc_id`` is left out.
    """
    merged: dict[str, dict[str, float]] = {}
    for source in sources:
        if source.get("doc_id") is None:  # a chunk written without one (by hand, by another tool) links nothing
            continue
        targets = source.get("links") or []
        if isinstance(targets, (str, int, float)) and not isinstance(targets, bool):
            targets = [targets]  # one value, as a cluster keeps a keyword field written without a list
        elif not isinstance(targets, list):
            targets = []
        weights = source.get("link_weights") or {}
        weights = weights if isinstance(weights, Mapping) else {}
        links = merged.setdefault(str(source["doc_id"]), {})
        for target in map(str, targets):
            links[target] = max(_link_weight(weights.get(target)), links.get(target, 0.0))
    return merged


def _link_weight(value: Any) -> float:
    valid = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if valid else 1.0


def build_graph(links: LinkMap) -> nx.DiGraph:
    """Every document named (as key or link target) is a node; ``a -> b`` for each ``b`` in ``links[a]``,
    with the link's ``weight`` (1 for a plain list of targets).

    Self-links are dropped: they add nothing a search could use.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(links)
    for doc_id, targets in links.items():
        weighted = targets if isinstance(targets, Mapping) else dict.fromkeys(targets, 1.0)
        graph.add_edges_from(
            (doc_id, target, {"weight": float(weight)}) for target, weight in weighted.items() if target != doc_id
        )
    return graph


def prior_values(graph: nx.DiGraph, kind: Prior) -> dict[str, float]:
    """Degree (in + out) or PageRank of every node, divided by the largest, so in [0, 1]; {} for ``none``."""
    if kind == "none" or graph.number_of_nodes() == 0:
        return {}
    measure = dict(graph.degree()) if kind == "degree" else nx.pagerank(graph)
    values = {str(node): float(value) for node, value in measure.items()}
    top = max(values.values())
    return {node: value / top if top > 0 else 0.0 for node, value in values.items()}


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


def adjacent(graph: nx.DiGraph, node: str, direction: Direction, min_weight: float = 0.0) -> dict[str, float]:
    """``{neighbor: link weight}`` one hop from ``node`` the way ``direction`` says, without links lighter
    than ``min_weight``; a pair linked both ways weighs its heavier link."""
    if node not in graph:
        return {}
    found: dict[str, float] = {}
    sides = ([graph.succ] if direction != "in" else []) + ([graph.pred] if direction != "out" else [])
    for side in sides:
        for other, data in side[node].items():
            weight = float(data.get("weight", 1.0))
            if other != node and weight >= min_weight:
                found[str(other)] = max(weight, found.get(str(other), 0.0))
    return found


def _best_first(entry: tuple[str, float]) -> tuple[float, str]:
    return -entry[1], entry[0]
