"""``esbridge index list`` on the embedded engine: a name that is a concrete index is said to be one."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.engines.embedded import EmbeddedEngine


def test_a_concrete_index_is_named_as_one_not_sent_to_index_create() -> None:
    # `index create` refuses that name ("a concrete index has the alias's name").
    engine = EmbeddedEngine(Path(os.environ["ESBRIDGE_DATA_DIR"]))
    try:
        engine.create_index("products", {"mappings": {"properties": {"name": {"type": "text"}}}})
    finally:
        engine.close()
    result = CliRunner().invoke(main, ["index", "list", "--index", "products", "--engine", "embedded"])
    assert result.exit_code == 0, result.output
    assert "products is an index, not an alias over versions (products-v1, ...)" in result.stdout
    assert "esbridge index create" not in result.stdout

    nothing = CliRunner().invoke(main, ["index", "list", "--index", "nothing", "--engine", "embedded"])
    assert "no index versions for alias nothing; run `esbridge index create`" in nothing.stdout


def test_an_alias_over_an_index_that_is_no_version_is_named_as_an_alias() -> None:
    # Neither "is an index, not an alias" nor "run `esbridge index create`", which refuses an alias that points.
    engine = EmbeddedEngine(Path(os.environ["ESBRIDGE_DATA_DIR"]))
    try:
        engine.create_index("catalog", {"mappings": {"properties": {"name": {"type": "text"}}}})
        engine.update_aliases([{"add": {"index": "catalog", "alias": "shop"}}])
    finally:
        engine.close()
    result = CliRunner().invoke(main, ["index", "list", "--index", "shop", "--engine", "embedded"])
    assert result.exit_code == 0, result.output
    assert "alias shop points to catalog, which is not one of its versions (shop-v1, ...)" in result.stdout
    assert "is an index, not an alias" not in result.stdout
    assert "esbridge index create" not in result.stdout
