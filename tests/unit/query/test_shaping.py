from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbridge.query.shaping import (
    ShapeOptions,
    above_floor,
    collapse,
    normalize,
    ranked,
    select,
    shape,
    type_slots,
)

NOTES = {f"n{index}": 1.0 - index / 10 for index in range(1, 6)}  # n1 0.9 ... n5 0.5
TASKS = {"t1": 0.4, "t2": 0.3}


def types_of(*groups: dict[str, float], untyped: tuple[str, ...] = ()) -> dict[str, str | None]:
    kinds: dict[str, str | None] = {item: item[0] for group in groups for item in group}
    kinds.update(dict.fromkeys(untyped))
    return kinds


def capped(scores: dict[str, float], top_n: int, **options: Any) -> list[str]:
    kinds = types_of(scores)
    return list(shape(scores, ShapeOptions(top_n=top_n, cap_types=True, **options), entity_type_of=kinds))


def test_ranked_keeps_input_order_among_equal_scores() -> None:
    assert ranked({"b": 1.0, "c": 2.0, "a": 1.0}) == [("c", 2.0), ("b", 1.0), ("a", 1.0)]
    with pytest.raises(ValueError, match="finite"):
        ranked({"a": float("nan")})


def test_collapse_keeps_the_best_chunk_of_each_document() -> None:
    results = [("a#0", 0.9), ("a#1", 0.8), ("b#0", 0.7), ("a#2", 0.6)]
    assert collapse(results, {item: item[0] for item, _ in results}) == [("a#0", 0.9), ("b#0", 0.7)]
    with pytest.raises(ValueError, match="no doc_id"):
        collapse(results, {})


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([0.5, 0.25, -0.1], [1.0, 0.5, 0.0]),
        ([3.0], [1.0]),
        ([0.0, 0.0], [1.0, 1.0]),
        ([-1.0, -2.0, -3.0], [1.0, 0.5, 0.0]),
        ([0.0, -2.0], [1.0, 0.0]),
        ([], []),
    ],
)
def test_normalize(scores: list[float], expected: list[float]) -> None:
    results = [(f"i{index}", score) for index, score in enumerate(scores)]
    assert [score for _, score in normalize(results)] == expected


def test_floor_drops_results_below_a_fraction_of_the_best() -> None:
    results = [("a", 1.0), ("b", 0.6), ("c", 0.5), ("d", 0.4)]
    assert above_floor(results, 0.5) == results[:3]
    assert above_floor(results, 0.0) == results


@pytest.mark.parametrize(
    ("top_n", "share", "slots"), [(10, 0.6, 6), (5, 0.6, 3), (1, 0.6, 1), (3, 0.5, 2), (100, 0.07, 7), (4, 0.01, 1)]
)
def test_type_slots(top_n: int, share: float, slots: int) -> None:
    assert type_slots(top_n, share) == slots


def test_a_type_takes_at_most_its_share_while_others_have_candidates() -> None:
    # top_n 5, share 0.6: 3 slots per type; n4 and n5 are passed over for the two tasks.
    assert capped({**NOTES, **TASKS}, 5) == ["n1", "n2", "n3", "t1", "t2"]


def test_passed_over_results_backfill_when_the_others_run_out() -> None:
    assert capped(NOTES, 4) == ["n1", "n2", "n3", "n4"]
    # One task only: n4 fills the fifth slot, and keeps its place by score.
    assert capped({**NOTES, "t1": 0.4}, 5) == ["n1", "n2", "n3", "n4", "t1"]


def test_backfill_goes_by_score_when_several_types_were_passed_over() -> None:
    # 1 slot per type: n1, t1 and the untyped u are taken; n2 and t2 wait; the one free slot goes to n2.
    scores = {"n1": 0.9, "t1": 0.8, "n2": 0.7, "t2": 0.6, "u": 0.5}
    kinds = {"n1": "n", "n2": "n", "t1": "t", "t2": "t"}
    assert [item for item, _ in select(ranked(scores), 4, kinds, slots=1)] == ["n1", "t1", "n2", "u"]


def test_the_share_is_configurable() -> None:
    # 2 slots: n3 is passed over, then backfills the slot left when the tasks run out.
    assert capped({**NOTES, **TASKS}, 5, type_share=0.4) == ["n1", "n2", "n3", "t1", "t2"]
    assert capped({**NOTES, **TASKS}, 4, type_share=0.4) == ["n1", "n2", "t1", "t2"]


def test_untyped_results_are_never_capped() -> None:
    scores = {"u1": 0.9, "u2": 0.8, "u3": 0.7, "t1": 0.4, "t2": 0.3, "t3": 0.2}
    kinds: dict[str, str | None] = {"u1": None, "u2": "", "t1": "t", "t2": "t", "t3": "t"}  # u3 not given
    assert [item for item, _ in select(ranked(scores), 4, kinds, slots=1)] == ["u1", "u2", "u3", "t1"]
    assert [item for item, _ in select(ranked(scores), 5, kinds, slots=1)] == ["u1", "u2", "u3", "t1", "t2"]


def test_shape_by_hand() -> None:
    scores = {"a#0": 8.0, "a#1": 7.0, "b#0": 6.0, "c#0": 4.0, "d#0": 2.0, "e#0": 1.0}
    doc_of = {item: item.split("#")[0] for item in scores}
    kinds = {"a#0": "note", "a#1": "note", "b#0": "note", "c#0": "note", "d#0": "task", "e#0": "task"}
    options = ShapeOptions(top_n=3, collapse=True, floor=0.2, cap_types=True, type_share=0.5)
    # Collapse drops a#1; normalized a 1.0, b 0.75, c 0.5, d 0.25, e 0.125; the floor drops e;
    # notes get ceil(0.5 * 3) = 2 slots while d is left, so c gives way to d.
    assert shape(scores, options, doc_of=doc_of, entity_type_of=kinds) == {"a#0": 1.0, "b#0": 0.75, "d#0": 0.25}


def test_shape_defaults_truncate_to_ten() -> None:
    scores = {f"i{index:02}": float(100 - index) for index in range(15)}
    shaped = shape(scores)
    assert list(shaped) == [f"i{index:02}" for index in range(10)]
    assert shaped["i01"] == 0.99
    assert shape({}) == {}


def test_shape_needs_the_data_of_the_options_it_is_given() -> None:
    with pytest.raises(ValueError, match="doc_of"):
        shape({"a": 1.0}, ShapeOptions(collapse=True))
    with pytest.raises(ValueError, match="entity_type_of"):
        shape({"a": 1.0}, ShapeOptions(cap_types=True))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"top_n": 0}, "top_n"),
        ({"floor": 1.5}, "floor"),
        ({"floor": -0.1}, "floor"),
        ({"type_share": 0.0}, "type_share"),
        ({"type_share": 1.1}, "type_share"),
    ],
)
def test_options_are_validated(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ShapeOptions(**options)


# Properties.

ITEMS = [f"d{doc}#{chunk}" for doc in range(6) for chunk in range(3)]


@st.composite
def inputs(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, str], dict[str, str | None], ShapeOptions]:
    scores = draw(st.dictionaries(st.sampled_from(ITEMS), st.floats(-1e6, 1e6, allow_nan=False), max_size=18))
    kinds = {item: draw(st.sampled_from([None, "note", "task", "person"])) for item in scores}
    options = ShapeOptions(
        top_n=draw(st.integers(1, 12)),
        collapse=draw(st.booleans()),
        floor=draw(st.floats(0.0, 1.0)),
        cap_types=draw(st.booleans()),
        type_share=draw(st.floats(0.01, 1.0)),
    )
    return scores, {item: item.split("#")[0] for item in scores}, kinds, options


@given(inputs())
def test_shape_invariants(data: Any) -> None:
    scores, doc_of, kinds, options = data
    shaped = shape(scores, options, doc_of=doc_of, entity_type_of=kinds)
    values = list(shaped.values())
    assert len(shaped) <= options.top_n
    assert set(shaped) <= set(scores)
    assert all(0.0 <= value <= 1.0 for value in values)
    assert values == sorted(values, reverse=True)
    if scores:
        assert values[0] == 1.0
    if options.collapse:
        assert len({doc_of[item] for item in shaped}) == len(shaped)


@given(inputs())
def test_soft_cap_is_respected_whenever_other_types_had_candidates(data: Any) -> None:
    scores, doc_of, kinds, options = data
    options = replace(options, cap_types=True)
    shaped = shape(scores, options, doc_of=doc_of, entity_type_of=kinds)
    results = collapse(ranked(scores), doc_of) if options.collapse else ranked(scores)
    candidates = [item for item, _ in above_floor(normalize(results), options.floor)]
    slots = type_slots(options.top_n, options.type_share)
    held = Counter(kinds[item] for item in shaped if kinds[item])
    assert len(shaped) == min(options.top_n, len(candidates))
    if any(count > slots for count in held.values()):
        # A type went over its slots, so every candidate left out was passed over by a full cap itself.
        left_out = [item for item in candidates if item not in shaped]
        assert all(kinds[item] and held[kinds[item]] >= slots for item in left_out)
