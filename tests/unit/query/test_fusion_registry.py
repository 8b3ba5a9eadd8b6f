from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import FUSION_METHODS, get_fusion, register_fusion, rrf
from esbridge.query.types import FusionResult, Runs

BUILT_INS = ("adaptive", "dbsf", "linear", "rrf")


@pytest.fixture
def registry() -> Iterator[MutableMapping[str, Any]]:
    saved = dict(FUSION_METHODS)
    yield FUSION_METHODS
    FUSION_METHODS.clear()
    FUSION_METHODS.update(saved)


def first_run_only(runs: Runs, *, weights: Mapping[str, float] | None = None, **params: Any) -> FusionResult:
    first = next(iter(runs.values()), {})
    return FusionResult(scores=dict(first))


def test_built_ins_are_registered_under_their_names() -> None:
    assert set(BUILT_INS) <= set(FUSION_METHODS)
    assert get_fusion("rrf") is rrf


@pytest.mark.parametrize("name", BUILT_INS)
def test_every_built_in_takes_weights_and_rejects_unknown_parameters(name: str) -> None:
    method = get_fusion(name)
    assert "weights" in inspect.signature(method).parameters
    with pytest.raises(ConfigError, match=f"'{name}' got unknown parameter\\(s\\) 'nonsense'"):
        method({"bm25": {"a": 1.0}}, weights=None, nonsense=1)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown fusion method 'combsum'; known: adaptive, dbsf, linear, qpp, rrf"):
        get_fusion("combsum")


def test_a_plugin_registers_like_the_built_ins(registry: dict[str, Any]) -> None:
    assert register_fusion("first", first_run_only) is first_run_only
    assert get_fusion("first")({"x": {"a": 2.0}}).scores == {"a": 2.0}
    register_fusion("first", first_run_only)  # the same method again is fine


def test_taking_a_registered_name_needs_replace(registry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="'rrf' is already registered"):
        register_fusion("rrf", first_run_only)
    register_fusion("rrf", first_run_only, replace=True)
    assert get_fusion("rrf") is first_run_only


@pytest.mark.parametrize("name", ["", " rrf2"])
def test_names_must_be_clean(name: str, registry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="non-empty name"):
        register_fusion(name, first_run_only)
