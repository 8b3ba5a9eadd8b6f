"""Ingest into an alias over several indices is refused before anything is written, on both engines; when an
index template makes the alias's next index (an alias rolled over), the way out names ``record-model
--in-template``, which records the model there too."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines import Engine
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.raw_client import templated_alias
from tests.integration.test_model_check_streams import _template, client
from tests.support.hashing import RECORDS, HashingEmbedder

__all__ = ["client"]


@pytest.fixture
def rolled(engine_kind: str, client: Any) -> Iterator[str]:
    """An alias over ``<alias>-000001`` and ``<alias>-000002`` (its write index), made from a template matching
    ``<alias>-*``; its indices and template deleted afterwards."""
    name = f"h138-rolled-{uuid.uuid4().hex[:8]}"
    template = _template(engine_kind, f"{name}-*", None, stream=False)
    with templated_alias(engine_kind, client, name, template, rollovers=1):
        yield name


def _ingest(engine: Engine, alias: str, tmp_path: Path) -> str:
    source = tmp_path / "a.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    manager = IndexManager(engine, alias, IndexParameters(dimension=32))
    with pytest.raises(errors.AmbiguousAlias) as refused:
        ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="a"))
    return str(refused.value)


def test_ingest_into_a_rolled_over_alias_names_record_model_in_template(
    engine: Engine, rolled: str, tmp_path: Path
) -> None:
    message = _ingest(engine, rolled, tmp_path)
    assert message.startswith(f"alias {rolled!r} points to several indices ({rolled}-000001, {rolled}-000002): ")
    assert message.endswith(
        f"`esbridge index record-model --index {rolled}` records a model in every index behind {rolled}, checking "
        f"each first (--in-template: in index template {rolled} too, which makes its next index)"
    )  # before: no --in-template, as if only a data stream's template could be given the record
    assert {index: engine.count(index) for index in engine.get_mappings(rolled)} == {
        f"{rolled}-000001": 0,
        f"{rolled}-000002": 0,
    }, "nothing was written"


def test_an_alias_no_template_makes_indices_for_is_not_told_of_in_template(
    engine: Engine, client: Any, tmp_path: Path
) -> None:
    alias = f"h138-plain-{uuid.uuid4().hex[:8]}"
    try:
        for index in (f"{alias}-a", f"{alias}-b"):
            engine.create_index(index, IndexManager(engine, alias, IndexParameters(dimension=32)).wanted_body())
        engine.update_aliases(
            [{"add": {"index": f"{alias}-a", "alias": alias}}, {"add": {"index": f"{alias}-b", "alias": alias}}]
        )
        message = _ingest(engine, alias, tmp_path)
        assert message.startswith(f"alias {alias!r} points to several indices ({alias}-a, {alias}-b): ")
        assert "--in-template" not in message
    finally:
        for index in (f"{alias}-a", f"{alias}-b"):
            engine.delete_index(index, missing_ok=True)
