"""Links used to re-score the direct results, without adding documents (``[pipeline.graph] mode = "rescore"``).

The cluster hypothesis as score regularisation (Diaz, "Regularizing ad hoc retrieval scores", CIKM
2005): a result linked to other well-scored results is more likely relevant than its own score says.
Each retrieved document ``d`` (scored by its best item ``s(d)``) gets a lift

    lift(d) = rescore_weight * sum_e t(d, e) * s(e) / sum_e t(d, e)

over the other retrieved documents ``e`` it is linked with (either way, links of at least
``min_link_weight``), ``t`` the link's weight over the heaviest such link of ``d``; every item of ``d``
gets the same lift, so a document's own chunks keep their order. A document linked with none keeps its
score. Nothing enters the list that retrieval did not find.

On CISI's co-citation links it was the one use of links that raised nDCG@10 (docs/evaluation.md); the
gain was not significant on 76 queries, so it is an option, not the default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

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
    return Rescored(dict(sorted(new.items(), key=lambda entry: (-entry[1], entry[0]))), lifts, linked)
