"""The readable answer of `esbridge search --explain`: each result says how it got where it is."""

from __future__ import annotations

from esbridge.cli.search import render
from esbridge.query.models import Explain, RetrieverExplain, SearchHit, SearchResponse


def _hit(item: str, score: float, explain: Explain) -> SearchHit:
    return SearchHit(id=item, doc_id=item.split("#")[0], score=score, title=item, explain=explain)


def test_explain_names_the_links_that_lifted_a_result_and_the_seeds_of_a_neighbour() -> None:
    found = {"bm25": RetrieverExplain(rank=7, score=3.5)}
    lifted = Explain(retrievers=found, neighbour_of=["a#0", "b#2"], link_lift=0.1183)
    neighbour = Explain(neighbour_of=["a#0"], hops=2)
    plain = Explain(retrievers=found)
    response = SearchResponse(
        query="q",
        search_mode="hybrid",
        took_ms=1.0,
        results=[_hit("c#0", 0.5, lifted), _hit("d#0", 0.4, neighbour), _hit("e#0", 0.3, plain)],
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == "       found by bm25 #7 (3.500); lifted +0.118 by links with a#0, b#2; recency x1"
    assert lines[5] == "       neighbour of a#0 (2 hops); recency x1"
    assert lines[7] == "       found by bm25 #7 (3.500); recency x1"


def test_explain_says_how_far_lifting_moved_a_result_down() -> None:
    found = {"knn": RetrieverExplain(rank=12, score=0.9)}
    lifted = Explain(retrievers=found, neighbour_of=["a#0"], link_lift=0.261, link_shift=0.25)
    shifted = Explain(retrievers=found, link_shift=0.25)
    response = SearchResponse(
        query="q", search_mode="hybrid", took_ms=1.0, results=[_hit("c#0", 0.5, lifted), _hit("d#0", 0.4, shifted)]
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == (
        "       found by knn #12 (0.900); lifted +0.261 by links with a#0; moved down 0.250 to stay below the kept "
        "results; recency x1"
    )
    assert lines[5] == "       found by knn #12 (0.900); moved down 0.250 to stay below the kept results; recency x1"


def test_explain_says_what_the_re_ranker_scored_a_result() -> None:
    # Re-ranking decides the order of the head; the readable explanation said nothing of it.
    found = {"bm25": RetrieverExplain(rank=4, score=0.231)}
    reranked = Explain(retrievers=found, recency_multiplier=1.2, rerank_score=0.0451)
    below = Explain(retrievers=found)
    response = SearchResponse(
        query="q", search_mode="hybrid", took_ms=1.0, results=[_hit("c#0", 1.0, reranked), _hit("d#0", 0.4, below)]
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == "       found by bm25 #4 (0.231); recency x1.2; re-ranker 0.045"
    assert lines[5] == "       found by bm25 #4 (0.231); recency x1"
