"""``esbridge index record-model`` on an alias rolled over by hand (as ILM or ISM roll it), on both engines: each
new index takes its mapping from the composable index template matching its name, so a model recorded in the
older indices reaches the next one only through that template (``--in-template``). A tiny 32-dimensional ONNX
encoder is the configured model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.embeddings.identity import META_KEY, recorded_identity
from esbridge.engines import Engine
from esbridge.query.model_check import searched_mapping
from tests.integration.raw_client import create_index, templated_alias
from tests.integration.test_model_check_streams import _template, client
from tests.integration.test_record_model_streams import _records, _template_meta, _vector, record, tiny
from tests.support.tiny_onnx import tiny_encoder

__all__ = ["client", "tiny"]  # fixtures shared with the data streams' tests


@pytest.fixture
def alias(engine_kind: str, client: Any) -> Iterator[str]:
    """An alias over ``<alias>-000001`` (its write index), made from a template matching ``<alias>-*`` that records
    no model; its indices and template deleted afterwards."""
    name = f"esbridge-test-record-rolled-{uuid.uuid4().hex[:8]}"
    with templated_alias(
        engine_kind, client, name, _template(engine_kind, f"{name}-*", {"owner": "logs"}, stream=False)
    ):
        yield name


def test_record_model_in_template_reaches_the_index_an_alias_is_rolled_over_to(
    engine_kind: str, engine: Engine, client: Any, alias: str, tiny: str
) -> None:
    client.indices.rollover(alias=alias)

    recorded = record(engine_kind, alias, tiny)
    assert recorded.exit_code == 0, recorded.output
    assert set(_records(engine, alias).values()) == {tiny}
    assert (
        f"warning: alias {alias}'s next index ({alias}-000003) takes its mapping _meta from index template {alias}, "
        "which records no model" in recorded.output
    )  # before: no warning; the next rollover made an index without the record unannounced
    assert _template_meta(client, alias) == {"owner": "logs"}  # told, not changed
    client.indices.rollover(alias=alias)
    with pytest.raises(errors.AmbiguousAlias) as refused:  # what the warning said
        searched_mapping(engine, alias)
    assert f"{alias}-000003: no model recorded" in str(refused.value)
    assert str(refused.value).endswith(  # before: "Point the alias at one index (POST _aliases), ..."
        f"Alias {alias}'s next index ({alias}-000004, made when it is rolled over) takes its mapping _meta from "
        f"index template {alias}, not from the older indices: record the model in the template's mapping _meta "
        "(esbridge_model) so that each rollover carries it, and in each index that lacks it "
        f"(`esbridge index record-model --index {alias} --in-template` does both)"
    )

    in_template = record(engine_kind, alias, tiny, "--in-template")
    assert in_template.exit_code == 0, in_template.output  # before: the template was not looked for
    assert (
        f"index template {alias} now records {tiny}: the indices alias {alias} is rolled over to "
        f"({alias}-000004 next) carry it" in in_template.output
    )
    assert "warning" not in in_template.output
    meta = _template_meta(client, alias)
    assert meta["owner"] == "logs" and meta[META_KEY]["name"] == tiny
    client.indices.rollover(alias=alias)
    records = _records(engine, alias)
    assert len(records) == 4 and records[f"{alias}-000004"] == tiny  # the new index too
    made = recorded_identity(searched_mapping(engine, alias), alias)  # the search is not refused
    assert made is not None and made.name == tiny


def test_record_model_asks_before_replacing_another_model_in_an_alias_template(
    engine_kind: str, engine: Engine, client: Any, alias: str, tiny: str, tmp_path: Path
) -> None:
    other = str(tiny_encoder(tmp_path / "other32", 32))
    assert record(engine_kind, alias, other, "--in-template").exit_code == 0
    client.indices.rollover(alias=alias)
    assert set(_records(engine, alias).values()) == {other}

    declined = record(engine_kind, alias, tiny, "--in-template")
    assert declined.exit_code == 1
    assert "cancelled; nothing was changed" in declined.output
    assert f"index template {alias} records {other}" in declined.output
    assert set(_records(engine, alias).values()) == {other}
    assert _template_meta(client, alias)[META_KEY]["name"] == other
    replaced = record(engine_kind, alias, tiny, "--in-template", "--yes")
    assert replaced.exit_code == 0, replaced.output
    assert set(_records(engine, alias).values()) == {tiny}
    assert _template_meta(client, alias)[META_KEY]["name"] == tiny


def test_record_model_in_template_refuses_an_alias_no_template_of_its_own_makes(
    engine_kind: str, engine: Engine, client: Any, tiny: str
) -> None:
    """OpenSearch matches no template; the Elasticsearch test build matches one of every index (``*``)."""
    name = f"esbridge-test-record-untemplated-{uuid.uuid4().hex[:8]}"
    aliases = {name: {"is_write_index": True}}
    mappings = {"properties": {"vector": _vector(engine_kind, 32)}}
    try:
        create_index(engine_kind, client, f"{name}-000001", mappings=mappings, aliases=aliases, knn=True)
        refused = record(engine_kind, name, tiny, "--in-template")
        assert refused.exit_code == 1  # before: recorded in the index, the template left unsought
        assert "Error: --in-template: " in refused.output
        assert f"the next index of alias {name} ({name}-000002, rolled over from write index {name}-000001)" in (
            refused.output
        )
        assert refused.output.rstrip().endswith("nothing was changed")
        assert _records(engine, name) == {f"{name}-000001": None}
    finally:
        client.indices.delete(index=f"{name}-*", expand_wildcards="all")
