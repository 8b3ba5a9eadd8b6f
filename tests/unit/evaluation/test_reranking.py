"""An evaluation run's re-rankers: one per setting, each (query, text) pair scored once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from esbridge.config.pipeline import RerankSettings
from esbridge.evaluation.reranking import MemoReranker, Rerankers
from esbridge.query.rerank import RERANKERS, Reranker


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.pairs.extend((query, text) for text in texts)
        return [float(len(text)) for text in texts]


def test_each_pair_is_scored_once_and_answers_keep_their_order() -> None:
    counting = Counting()
    memo = MemoReranker(counting)
    assert memo.score("q", ["aa", "b"]) == [2.0, 1.0]
    assert memo.score("q", ["b", "ccc", "aa", "ccc"]) == [1.0, 3.0, 2.0, 3.0]
    assert memo.score("other", ["b"]) == [1.0]
    assert counting.pairs == [("q", "aa"), ("q", "b"), ("q", "ccc"), ("other", "b")]


def test_one_reranker_per_setting_and_none_when_off(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[RerankSettings] = []

    def factory(settings: RerankSettings) -> Reranker:
        made.append(settings)
        return Counting()

    monkeypatch.setitem(RERANKERS, "counting", factory)
    rerankers = Rerankers()
    on = RerankSettings(enabled=True, name="counting")
    assert rerankers.get(RerankSettings(name="counting")) is None
    first = rerankers.get(on)
    assert first is not None
    assert rerankers.get(on.model_copy(update={"top": 50, "weight": 0.5})) is first
    assert rerankers.get(on.model_copy(update={"precision": "int8"})) is not first
    assert len(made) == 2
