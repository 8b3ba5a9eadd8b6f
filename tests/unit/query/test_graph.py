"""Graph expansion by hand: seeds, directions, hops, caps, priors and where neighbours are placed; and the link
graph's statistics and neighbourhoods. The requests expansion sends, and its properties: test_graph_requests.py."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import pytest

from esbridge.query.graph import GraphExpansion, GraphOptions, expand, place_below, seed_docs, with_neighbors
from esbridge.query.link_graph import build_graph, graph_stats, neighborhood, prior_values
from tests.unit.query.graph_examples import LINKS, SCORES, docs_of


def run(
    links: Mapping[str, Sequence[str]] | nx.DiGraph = LINKS,
    scores: Mapping[str, float] = SCORES,
    **options: Any,
) -> GraphExpansion:
    return expand(scores, docs_of(scores), links, GraphOptions(**{"seeds": 2, "placement": "below_all", **options}))


def hops_of(expansion: GraphExpansion) -> dict[str, dict[str, int]]:
    return {item: neighbor.neighbor_of for item, neighbor in expansion.neighbors.items()}


def test_both_directions_one_hop_by_hand() -> None:
    # Seeds A (0.9, its best chunk A#1) and B (0.5). A reaches X, B (direct: skipped), Z and W; B reaches Y, A, W.
    # Raw: W = 0.9*0.5 + 0.5*0.5 = 0.70, X = Z = 0.45, Y = 0.25; placed below the lowest direct 0.3 as
    # 0.3*raw/(0.3+raw): W 0.21, X and Z 0.18, Y 0.075/0.55.
    expansion = run()
    assert list(expansion.scores) == ["W#0", "X#0", "Z#0", "Y#0"]
    assert expansion.scores == pytest.approx({"W#0": 0.21, "X#0": 0.18, "Z#0": 0.18, "Y#0": 0.075 / 0.55})
    assert hops_of(expansion) == {
        "W#0": {"A#1": 1, "B#0": 1},
        "X#0": {"A#1": 1},
        "Z#0": {"A#1": 1},
        "Y#0": {"B#0": 1},
    }
    w = expansion.neighbors["W#0"]
    assert (w.doc_id, w.hops, w.prior) == ("W", 1, 1.0)
    assert w.raw == pytest.approx(0.70)
    assert expansion.doc_of == {"W#0": "W", "X#0": "X", "Z#0": "Z", "Y#0": "Y"}


def test_below_seeds_neighbors_keep_their_raw_score_under_their_weakest_seed() -> None:
    # Same seeds as above: A (0.9, via A#1) and B (0.5). Raw W = 0.70, X = Z = 0.45, Y = 0.25.
    # W neighbors both seeds, so it is capped just below B's 0.5; X and Z (A only) keep 0.45, under A's 0.9;
    # Y (B only) keeps 0.25. X and Z now outrank the direct C#0 (0.3); Y does not.
    expansion = run(placement="below_seeds")
    assert list(expansion.scores) == ["W#0", "X#0", "Z#0", "Y#0"]
    assert expansion.scores["W#0"] == math.nextafter(0.5, 0)
    assert expansion.scores["X#0"] == expansion.scores["Z#0"] == pytest.approx(0.45)
    assert expansion.scores["Y#0"] == pytest.approx(0.25)
    merged = with_neighbors(SCORES, expansion)
    assert list(merged) == ["A#1", "A#0", "B#0", "W#0", "X#0", "Z#0", "C#0", "Y#0"]


def test_the_default_placement_is_below_seeds() -> None:
    assert GraphOptions().placement == "below_seeds"
    with pytest.raises(ValueError, match="placement"):
        GraphOptions(placement="anywhere")  # type: ignore[arg-type]


def test_out_follows_links_only() -> None:
    expansion = run(direction="out")
    assert expansion.scores == pytest.approx({"X#0": 0.3 * 0.45 / 0.75, "Y#0": 0.3 * 0.25 / 0.55})


def test_in_follows_backlinks_only() -> None:
    expansion = run(direction="in")
    assert expansion.scores == pytest.approx({"W#0": 0.21, "Z#0": 0.18})


def test_only_the_top_seed_documents_are_expanded() -> None:
    expansion = run(seeds=1)
    assert hops_of(expansion) == {"W#0": {"A#1": 1}, "X#0": {"A#1": 1}, "Z#0": {"A#1": 1}}


def test_per_seed_cap_keeps_nearest_then_by_id() -> None:
    expansion = run(per_seed=1)
    assert hops_of(expansion) == {"W#0": {"A#1": 1, "B#0": 1}}
    assert expansion.neighbors["W#0"].raw == pytest.approx(0.70)


def test_two_hops_decay_and_fewest_hops() -> None:
    links = {**LINKS, "X": ["V"]}
    # From A: X at 1 hop (0.45), Y via B and V via X at 2 hops (0.9*0.5*0.5 = 0.225); from B: Y at 1 hop (0.25).
    expansion = run(links, direction="out", hops=2)
    raws = {item: neighbor.raw for item, neighbor in expansion.neighbors.items()}
    assert raws == pytest.approx({"Y#0": 0.475, "X#0": 0.45, "V#0": 0.225})
    assert list(expansion.scores) == ["Y#0", "X#0", "V#0"]
    assert expansion.neighbors["Y#0"].neighbor_of == {"A#1": 2, "B#0": 1}
    assert expansion.neighbors["Y#0"].hops == 1
    assert expansion.neighbors["V#0"].hops == 2


def test_weight_and_decay_scale_the_raw_score() -> None:
    expansion = run({"A": ["X"], "X": ["V"]}, direction="out", hops=2, weight=0.8, decay=0.25)
    raws = {item: neighbor.raw for item, neighbor in expansion.neighbors.items()}
    assert raws == pytest.approx({"X#0": 0.9 * 0.8, "V#0": 0.9 * 0.8 * 0.25})


def test_weight_zero_turns_expansion_off() -> None:
    assert run(weight=0) == GraphExpansion({}, {})
    assert seed_docs(SCORES, docs_of(SCORES), GraphOptions(weight=0)) == []


def test_documents_with_a_direct_result_are_never_neighbors() -> None:
    expansion = run({"A": ["C", "B"], "B": ["A"]})
    assert expansion.scores == {}


def test_seeds_are_documents_by_best_item_and_need_a_positive_score() -> None:
    scores = {"A#1": 0.9, "A#0": 0.6, "B#0": 0.0, "C#0": -1.0, "D#0": 0.2}
    assert seed_docs(scores, docs_of(scores), GraphOptions(seeds=5)) == ["A", "D"]
    assert seed_docs(scores, docs_of(scores), GraphOptions(seeds=1)) == ["A"]


def test_placement_when_the_lowest_direct_score_is_zero() -> None:
    # No room between 0 and 0: the band is (0 - spread, 0) with spread 1.0; raw 0.5 gives 0 - 1/(1 + 0.5).
    scores = {"A#0": 1.0, "C#0": 0.0}
    expansion = run({"A": ["X"]}, scores)
    assert expansion.scores == pytest.approx({"X#0": -2 / 3})


def test_place_below_is_strictly_below_even_for_huge_raw_scores() -> None:
    assert place_below(1e300, 0.5, 0.5) < 0.5
    assert place_below(1.0, 0.5, 0.5) == pytest.approx(1 / 3)
    assert place_below(1e-300, 0.5, 0.5) > 0
    assert place_below(3.0, -1.0, 2.0) == pytest.approx(-1.0 - 4 / 5)


def test_degree_prior_multiplies_and_breaks_ties_under_the_cap() -> None:
    links = {"A": ["P", "Q"], "R": ["Q"], "S": ["Q"]}
    plain = run(links, direction="out", per_seed=1)
    assert list(plain.scores) == ["P#0"]  # by id when there is no prior
    # Degrees in the fetched graph: A 2, Q 3, P 1, R 1, S 1; divided by 3. Q's multiplier: 1 + 0.1 * 3/3.
    boosted = run(links, direction="out", per_seed=1, prior="degree")
    assert list(boosted.scores) == ["Q#0"]
    assert boosted.neighbors["Q#0"].prior == pytest.approx(1.1)
    assert boosted.neighbors["Q#0"].raw == pytest.approx(0.45 * 1.1)


def test_a_given_prior_replaces_the_local_one() -> None:
    options = GraphOptions(direction="out", prior="pagerank", prior_weight=0.5)
    expansion = expand(SCORES, docs_of(SCORES), {"A": ["P", "Q"]}, options, prior={"P": 1.0, "Q": 0.2})
    assert {item: neighbor.prior for item, neighbor in expansion.neighbors.items()} == pytest.approx(
        {"P#0": 1.5, "Q#0": 1.1}
    )
    with pytest.raises(ValueError, match="prior"):
        expand(SCORES, docs_of(SCORES), {"A": ["P"]}, options, prior={"P": 2.0})


def test_prior_values_are_divided_by_the_largest() -> None:
    graph = build_graph(LINKS)
    assert prior_values(graph, "degree") == {"A": 1.0, "B": 0.75, "X": 0.25, "Y": 0.25, "Z": 0.25, "W": 0.5}
    assert prior_values(graph, "none") == {}
    pagerank = prior_values(graph, "pagerank")
    assert max(pagerank.values()) == 1.0
    assert all(0 < value <= 1 for value in pagerank.values())


def test_neighbor_items_are_first_chunks_unless_told_otherwise() -> None:
    expansion = expand(SCORES, docs_of(SCORES), {"A": ["X"]}, GraphOptions(), item_of=lambda doc: f"doc:{doc}")
    assert list(expansion.scores) == ["doc:X"]
    with pytest.raises(ValueError, match="already in the list"):
        expand(SCORES, docs_of(SCORES), LINKS, GraphOptions(), item_of=lambda doc: "same")


def test_a_digraph_can_be_given_instead_of_link_data() -> None:
    assert run(build_graph(LINKS)) == run(LINKS)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no doc_id"):
        expand({"A#0": 1.0}, {}, LINKS)
    with pytest.raises(ValueError, match="finite"):
        expand({"A#0": float("nan")}, {"A#0": "A"}, LINKS)


def test_nothing_to_expand() -> None:
    assert expand({}, {}, LINKS) == GraphExpansion({}, {})
    assert run({}) == GraphExpansion({}, {})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seeds", 0),
        ("per_seed", 0),
        ("hops", 3),
        ("hops", 0),
        ("direction", "sideways"),
        ("weight", -0.1),
        ("weight", float("inf")),
        ("decay", 0.0),
        ("decay", 1.5),
        ("prior", "betweenness"),
        ("prior_weight", -1.0),
    ],
)
def test_options_are_validated(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"graph {field}"):
        GraphOptions(**{field: value})  # type: ignore[arg-type]


def test_with_neighbors_puts_them_last() -> None:
    merged = with_neighbors(SCORES, run())
    assert list(merged) == ["A#1", "A#0", "B#0", "C#0", "W#0", "X#0", "Z#0", "Y#0"]


# esbridge graph stats / neighbors.


def test_build_graph_keeps_every_document_and_drops_self_links() -> None:
    graph = build_graph({"A": ["A", "B"], "C": []})
    assert sorted(graph.nodes) == ["A", "B", "C"]
    assert list(graph.edges) == [("A", "B")]


def test_graph_stats_by_hand() -> None:
    graph = build_graph({"A": ["B"], "B": ["C"], "C": ["A"], "D": ["E"], "F": []})
    stats = graph_stats(graph, top=3)
    assert (stats.nodes, stats.edges, stats.components, stats.largest_component) == (6, 4, 3, 3)
    assert stats.density == pytest.approx(4 / 30)
    assert stats.top_degree == (("A", 2), ("B", 2), ("C", 2))
    assert len(stats.top_pagerank) == 3


def test_graph_stats_pagerank_finds_the_hub() -> None:
    stats = graph_stats(build_graph({"a": ["hub"], "b": ["hub"], "c": ["hub", "a"]}), top=2)
    assert [doc for doc, _ in stats.top_pagerank] == ["hub", "a"]
    assert stats.top_degree == (("hub", 3), ("a", 2))


def test_graph_stats_of_an_empty_graph() -> None:
    stats = graph_stats(build_graph({}))
    assert (stats.nodes, stats.edges, stats.density, stats.components, stats.largest_component) == (0, 0, 0.0, 0, 0)
    assert (stats.top_degree, stats.top_pagerank) == ((), ())
    with pytest.raises(ValueError, match="top"):
        graph_stats(build_graph({}), top=-1)


def test_neighborhood_in_and_out_with_hops() -> None:
    graph = build_graph({"A": ["B"], "B": ["C"], "D": ["A"], "E": ["D"]})
    near = neighborhood(graph, "A")
    assert (near.outgoing, near.incoming) == ({"B": 1}, {"D": 1})
    far = neighborhood(graph, "A", hops=2)
    assert (far.outgoing, far.incoming) == ({"B": 1, "C": 2}, {"D": 1, "E": 2})
    with pytest.raises(ValueError, match="not a document"):
        neighborhood(graph, "nope")
    with pytest.raises(ValueError, match="hops"):
        neighborhood(graph, "A", hops=0)
