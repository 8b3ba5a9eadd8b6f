"""``outcome.deeper``: when collapse would leave fewer than top_n documents, ask again four times deeper."""

from __future__ import annotations

import pytest

from esbridge.query.outcome import DEEPEST_TOP_K, deeper, lost
from esbridge.query.retrieval import Retrieved


def _runs(**runs: list[str]) -> Retrieved:
    return Retrieved(
        runs={name: {chunk: 1.0 / (rank + 1) for rank, chunk in enumerate(ids)} for name, ids in runs.items()}
    )


FULL_OF_TWO = _runs(bm25=["a#0", "a#1", "b#0", "b#1"], knn=["a#2", "b#2", "a#3", "b#3"])


def test_full_lists_of_too_few_documents_are_asked_again_four_times_deeper() -> None:
    assert deeper(FULL_OF_TWO, top_k=4, top_n=3, collapse=True) == 16


@pytest.mark.parametrize(
    ("retrieved", "top_k", "top_n", "collapse"),
    [
        (FULL_OF_TWO, 4, 3, False),  # chunks asked for: four chunks are enough
        (FULL_OF_TWO, 4, 2, True),  # as many documents as asked for
        (_runs(bm25=["a#0", "a#1", "b#0"], knn=["a#2"]), 4, 3, True),  # no list full: there are no more
        (FULL_OF_TWO, DEEPEST_TOP_K, 3, True),  # as deep as it goes
    ],
)
def test_an_answer_that_will_do_is_not_asked_again(
    retrieved: Retrieved, top_k: int, top_n: int, collapse: bool
) -> None:
    assert deeper(retrieved, top_k=top_k, top_n=top_n, collapse=collapse) is None


def test_the_last_round_stops_at_the_deepest() -> None:
    many = _runs(bm25=[f"a#{i}" for i in range(400)])
    assert deeper(many, top_k=400, top_n=2, collapse=True) == DEEPEST_TOP_K


def test_a_deeper_answer_that_lost_a_retriever_or_shards_does_not_replace_the_one_before() -> None:
    both = _runs(bm25=["a#0"], knn=["a#1"])
    assert lost(both, _runs(bm25=["a#0", "b#0"], knn=["a#1", "b#1"])) is None
    assert lost(both, _runs(bm25=["a#0", "b#0"])) == "knn did not answer"
    lacking = Retrieved(runs=both.runs, warnings=("bm25: 1 of 2 shards failed",), partial=True)
    assert lost(both, lacking) == "bm25: 1 of 2 shards failed"
    assert lost(lacking, lacking) is None
