"""IndexManager on the embedded engine: what it says about a name that is not an alias it manages."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import IndexNotFound
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

PARAMS = IndexParameters(dimension=2)


def test_a_concrete_index_is_named_as_one_not_sent_to_index_create(tmp_path: Path) -> None:
    # `index create` refuses that name ("a concrete index has the alias's name"): do not send the operator there.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        engine.create_index("products", IndexManager(engine, "products", PARAMS).wanted_body())
        with pytest.raises(IndexNotFound, match=r"products is an index, not an alias .*products-v1") as caught:
            IndexManager(engine, "products", PARAMS).current()
        assert "esbridge index create" not in str(caught.value)
        with pytest.raises(IndexNotFound, match=r"run `esbridge index create`"):
            IndexManager(engine, "nothing", PARAMS).current()
    finally:
        engine.close()


def test_a_reindex_of_a_concrete_index_says_it_is_one(tmp_path: Path) -> None:
    # Not "the alias has no index": the name holds documents, only not behind esbridge's versions.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        engine.create_index("products", IndexManager(engine, "products", PARAMS).wanted_body())
        with pytest.raises(IndexNotFound, match=r"products is an index, not an alias .*products-v1") as caught:
            IndexManager(engine, "products", PARAMS).reindex()
        assert caught.value.operation == "reindex"
        with pytest.raises(IndexNotFound, match=r"no index behind this alias: nothing to reindex"):
            IndexManager(engine, "nothing", PARAMS).reindex()
    finally:
        engine.close()
