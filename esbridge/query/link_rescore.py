"""Links used to re-score the direct results, without adding documents (``[pipeline.graph] mode = "rescore"``).

The cluster hypothesis as score regularisation (Diaz, "Regularizing ad hoc retrieval scores", CIKM
2005): a result linked to other well-scored results is more likely relevant than its own score says.
Each retrieved document ``d`` (scored by its best item ``s(d)``) gets a lift

    lift(d) = rescore_weight * sum_e t(d, e) * s(e) / sum_e t(d, e)

over the other retrieved documents ``e`` it is linked with (either way, links of at least
``min_link_weight``), ``t`` the link's weight over the heaviest such link of ``d``; every item of ``d``
gets the same lift, so a document's own chunks keep their order. A document linked with none keeps its
score. Nothing enters the list that retrieval did not find.

With ``mode = "lift"`` (``lift``) the first ``keep_top`` documents keep their places, and each document
below them gets

    lift(d) = rescore_weight * sum_s t(d, s) * s(s)

over the top ``seeds`` documents ``s`` it is linked with (links of at least ``min_link_weight``; ``t`` the
link's weight over the heaviest link of ``d`` with ``link_weighting = "proportional"``, else 1): a result
tied to several strong results rises among the weaker ones. Nothing is lifted above the kept documents
(when a lifted score would reach the last kept one, every positive score below is scaled down by the same
factor, so that none falls below 0), so a search of ``keep_top`` results or fewer is unchanged: this is
for recall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from esbridge.query.graph import GraphOptions, best_items
from esbridge.query.link_graph import LinkMap, adjacent, build_graph


@dataclass(frozen=True)
class Rescored:
    """Every item with its new score (best first, ties by id), and what lifted each lifted document."""

    scores: dict[str, float]
    lifts: dict[str, float]
    """doc_id -> the lift its items got (documents linked with no other result are absent)"""
    linked: dict[str, list[str]]
    """doc_id -> the best items of the other results it is linked with, most strongly tied first"""
    shifts: dict[str, float] = field(default_factory=dict)
    """``lift`` only: item -> how far it was moved down so that none passes the kept documents"""


def rescore(
    scores: Mapping[str, float], doc_of: Mapping[str, str], links: LinkMap | nx.DiGraph, options: GraphOptions
) -> Rescored:
    """The direct results re-scored by their links to each other (see the module docstring)."""
    graph = links if isinstance(links, nx.DiGraph) else build_graph(links)
    best = best_items(scores, doc_of)
    lifts: dict[str, float] = {}
    linked: dict[str, list[str]] = {}
    if options.rescore_weight > 0:
        for doc_id in best:
            tied = {
                other: weight
                for other, weight in adjacent(graph, doc_id, options.direction, options.min_link_weight).items()
                if other in best
            }
            if not tied:
                continue
            heaviest = max(tied.values())
            total = math.fsum(weight / heaviest for weight in tied.values())
            mean = math.fsum(weight / heaviest * best[other][1] for other, weight in tied.items()) / total
            lifts[doc_id] = options.rescore_weight * mean
            linked[doc_id] = [best[other][0] for other in sorted(tied, key=lambda other: (-tied[other], other))]
    new = {item: score + lifts.get(doc_of[item], 0.0) for item, score in scores.items()}
    return Rescored(_ordered(new), lifts, linked)


def lift(
    scores: Mapping[str, float], doc_of: Mapping[str, str], links: LinkMap | nx.DiGraph, options: GraphOptions
) -> Rescored:
    """The direct results below the first ``options.keep_top`` documents lifted by their links to the top
    ``options.seeds`` (see the module docstring)."""
    graph = links if isinstance(links, nx.DiGraph) else build_graph(links)
    best = best_items(scores, doc_of)
    order = list(best)
    if len(order) <= options.keep_top or options.rescore_weight == 0:
        return Rescored(_ordered(scores), {}, {})
    kept = set(order[: options.keep_top])
    seeds = [doc_id for doc_id in order[: options.seeds] if best[doc_id][1] > 0]
    proportional = options.link_weighting == "proportional"
    lifts: dict[str, float] = {}
    linked: dict[str, list[str]] = {}
    for doc_id in order[options.keep_top :]:
        tied = adjacent(graph, doc_id, options.direction, options.min_link_weight)
        from_seeds = {seed: tied[seed] for seed in seeds if seed in tied and seed != doc_id}
        if not from_seeds:
            continue
        heaviest = max(tied.values())
        strength = {seed: weight / heaviest if proportional else 1.0 for seed, weight in from_seeds.items()}
        lifts[doc_id] = options.rescore_weight * math.fsum(strength[seed] * best[seed][1] for seed in from_seeds)
        linked[doc_id] = [best[seed][0] for seed in sorted(from_seeds, key=lambda seed: (-strength[seed], seed))]
    raised = {item: score + lifts.get(doc_of[item], 0.0) for item, score in scores.items() if doc_of[item] not in kept}
    cutoff = best[order[options.keep_top - 1]][1]
    below = math.nextafter(cutoff, -math.inf)
    lowered = {item: min(score, below) for item, score in _under(raised, cutoff).items()}
    shifts = {item: raised[item] - score for item, score in lowered.items() if score < raised[item]}
    if max(raised.values()) <= cutoff:  # nothing would pass the kept ones: nothing moved but by a rounding
        shifts = {}
    return Rescored(_ordered({**scores, **lowered}), lifts, linked, shifts)


def _under(raised: Mapping[str, float], cutoff: float) -> dict[str, float]:
    """``raised`` brought under ``cutoff`` in order: positive scores scaled by one factor, so that they stay
    positive (a score below 0 would show as 0 and its explanation would not add up); with no room above 0
    (``cutoff <= 0``), every score shifted down by one amount."""
    top = max(raised.values())
    if top <= cutoff:
        return dict(raised)
    if cutoff <= 0:
        return {item: score - (top - cutoff) for item, score in raised.items()}
    factor = cutoff / top
    return {item: score * factor if score > 0 else score for item, score in raised.items()}


def _ordered(scores: Mapping[str, float]) -> dict[str, float]:
    return dict(sorted(scores.items(), key=lambda entry: (-entry[1], entry[0])))
