"""Requests the client library sends twice, on the real engines.

opensearch-py and elasticsearch-py send a request again when its answer does not come within ``timeout_s``
(``retry_on_timeout``); a busy cluster can take longer than that to create an index. The engine made the index
on the first request and refuses the second as a duplicate; a deleted index answers the second delete with 404.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.errors import IndexAlreadyExists, IndexNotFound
from esbridge.query.concepts import build_concept_index, concept_index_name
from tests.integration.test_index_lifecycle import chunk, manager


class CreateSentTwice:
    """The live engine, except that each create-index request is sent again, as after a lost first answer."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        self._engine.create_index(index, body)
        self._engine.create_index(index, body)


def test_a_create_sent_again_by_the_client_makes_the_index_once(engine: Engine, alias: str) -> None:
    made = manager(CreateSentTwice(engine), alias).create()

    assert made == f"{alias}-v1"
    assert engine.alias_targets(alias) == [made]
    assert [info.name for info in engine.list_indices(f"{alias}*")] == [made]
    assert "esbridge_creation" not in engine.get_mapping(made).get("_meta", {})
    assert not engine.bulk(alias, [chunk("a#0", title="written through the alias")]).failed


def test_an_index_another_client_made_is_still_refused(engine: Engine, alias: str) -> None:
    theirs = f"{alias}-v1"

    class MadeMeanwhile(CreateSentTwice):
        def create_index(self, index: str, body: Mapping[str, Any]) -> None:
            self._engine.create_index(index, {"mappings": {"_meta": {"made_by": "another client"}}})
            self._engine.create_index(index, body)

    with pytest.raises(IndexAlreadyExists, match="already exists"):
        manager(MadeMeanwhile(engine), alias).create()
    assert engine.get_mapping(theirs)["_meta"] == {"made_by": "another client"}, "the other client's index is kept"
    assert engine.alias_targets(alias) == []


class DeleteSentTwice:
    """The live engine, except that each delete-index request is sent again, as after a lost first answer."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def delete_index(self, index: str, *, missing_ok: bool = False) -> bool:
        self._engine.delete_index(index, missing_ok=missing_ok)
        return self._engine.delete_index(index, missing_ok=missing_ok)


def test_a_reindex_whose_delete_of_the_old_version_is_sent_again_succeeds(engine: Engine, alias: str) -> None:
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"n{n}#0", title=f"note {n}") for n in range(5)]).failed
    engine.refresh(alias)

    outcome = manager(DeleteSentTwice(engine), alias).reindex(delete_old=True)

    assert (outcome.new, outcome.deleted_old) == (f"{alias}-v2", True)
    assert engine.alias_targets(alias) == [f"{alias}-v2"]
    assert [info.name for info in engine.list_indices(f"{alias}*")] == [f"{alias}-v2"]
    assert engine.count(alias) == 5


def test_dropping_an_old_version_whose_delete_is_sent_again_succeeds(engine: Engine, alias: str) -> None:
    manager(engine, alias).create()
    manager(engine, alias).reindex()

    deleted = manager(DeleteSentTwice(engine), alias).drop(version=1)

    assert deleted == [f"{alias}-v1"]
    assert [info.name for info in engine.list_indices(f"{alias}*")] == [f"{alias}-v2"]
    assert engine.alias_targets(alias) == [f"{alias}-v2"]


def test_dropping_a_version_that_is_not_there_says_so(engine: Engine, alias: str) -> None:
    manager(engine, alias).create()

    with pytest.raises(IndexNotFound, match=f"{alias}-v7"):
        manager(engine, alias).drop(version=7)
    assert engine.alias_targets(alias) == [f"{alias}-v1"]


def test_a_concept_index_whose_create_is_sent_again_is_built(
    engine: Engine, alias: str, embedder: CachedEmbedder
) -> None:
    terms = ["photovoltaic", "turbine", "battery"]

    vocabulary = build_concept_index(CreateSentTwice(engine), alias, terms, embedder)

    name = concept_index_name(alias)
    assert vocabulary.written == len(terms)
    assert engine.count(name) == len(terms)
    assert "esbridge_creation" not in engine.get_mapping(name).get("_meta", {})
