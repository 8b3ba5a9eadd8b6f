"""Weighted links in graph expansion: minimum weight, strongest-first selection, proportional shares."""

from __future__ import annotations

import pytest

from esbridge.query.graph import GraphOptions, expand, reach
from esbridge.query.link_graph import LinkMap, adjacent, build_graph

SCORES = {"A#0": 0.8}
DOC_OF = {"A#0": "A"}
STAR = {"A": {"X": 4.0, "Y": 2.0, "Z": 1.0}}


def placed(options: GraphOptions, links: LinkMap = STAR) -> dict[str, float]:
    return expand(SCORES, DOC_OF, links, options).scores


def test_each_seed_keeps_its_most_strongly_tied_neighbors() -> None:
    # Unweighted selection would keep X and Y by id too; Z < Y < X by weight, and W sorts first by id.
    links = {"A": {"W": 1.0, "X": 4.0, "Y": 2.0}}
    assert placed(GraphOptions(per_seed=2, direction="out"), links) == {"X#0": 0.4, "Y#0": 0.4}


def test_proportional_shares_follow_the_weight_over_the_seeds_heaviest_link() -> None:
    options = GraphOptions(direction="out", link_weighting="proportional")
    # 0.8 x 0.5 x (4/4, 2/4, 1/4)
    assert placed(options) == pytest.approx({"X#0": 0.4, "Y#0": 0.2, "Z#0": 0.1})
    neighbors = expand(SCORES, DOC_OF, STAR, options).neighbors
    assert [neighbors[item].strength for item in ("X#0", "Y#0", "Z#0")] == [1.0, 0.5, 0.25]


def test_links_lighter_than_the_minimum_are_not_followed() -> None:
    options = GraphOptions(direction="out", min_link_weight=2.0, link_weighting="proportional")
    assert placed(options) == pytest.approx({"X#0": 0.4, "Y#0": 0.2})
    assert placed(GraphOptions(direction="out", min_link_weight=5.0)) == {}


def test_scale_of_the_weights_does_not_matter() -> None:
    scaled = {"A": {target: weight * 1000 for target, weight in STAR["A"].items()}}
    options = GraphOptions(direction="out", link_weighting="proportional")
    assert placed(options, scaled) == pytest.approx(placed(options))


def test_two_hop_strength_is_the_best_product_along_a_path() -> None:
    links = {"A": {"X": 4.0, "Y": 2.0}, "X": {"Q": 3.0, "R": 1.0}, "Y": {"Q": 6.0}}
    options = GraphOptions(hops=2, direction="out", per_seed=5, link_weighting="proportional")
    assert reach(build_graph(links), "A", options) == {
        "X": (1, 1.0),
        "Y": (1, 0.5),
        "Q": (2, 1.0),  # via X: 1 x 3/3 (via Y: 0.5 x 6/6)
        "R": (2, pytest.approx(1 / 3)),
    }
    # 2 hops: 0.8 x 0.5 x decay 0.5 x strength
    assert placed(options, links) == pytest.approx({"X#0": 0.4, "Y#0": 0.2, "Q#0": 0.2, "R#0": 0.2 / 3})


def test_a_pair_linked_both_ways_weighs_its_heavier_link() -> None:
    graph = build_graph({"A": {"B": 2.0}, "B": {"A": 5.0, "C": 1.0}})
    assert adjacent(graph, "A", "both") == {"B": 5.0}
    assert adjacent(graph, "A", "out") == {"B": 2.0}
    assert adjacent(graph, "A", "in") == {"B": 5.0}
    assert adjacent(graph, "B", "both", min_weight=2.0) == {"A": 5.0}
    assert adjacent(graph, "nobody", "both") == {}


def test_unweighted_links_behave_as_before() -> None:
    plain = {"A": ["X", "Y"]}
    weighted = {"A": {"X": 1.0, "Y": 1.0}}
    options = GraphOptions(direction="out", link_weighting="proportional")
    assert placed(options, plain) == placed(options, weighted) == {"X#0": 0.4, "Y#0": 0.4}


@pytest.mark.parametrize(
    ("field", "value"), [("min_link_weight", -1.0), ("min_link_weight", float("nan")), ("link_weighting", "log")]
)
def test_bad_weight_options_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GraphOptions(**{field: value})  # type: ignore[arg-type]
