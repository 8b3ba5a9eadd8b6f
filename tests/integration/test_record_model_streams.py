"""``esbridge index record-model`` on names over several indices, on the real engines: an alias over two
indices (both engines) and an OpenSearch data stream after rollovers, with the index template its rollovers
take their mapping from. A tiny 32-dimensional ONNX encoder is the configured model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from esbridge import errors
from esbridge.cli import main
from esbridge.embeddings.identity import META_KEY, recorded_identity
from esbridge.engines import Engine
from esbridge.engines.base import IndexTemplates
from esbridge.ingest.record_by_hand import record_in_template
from esbridge.query.model_check import searched_mapping
from tests.integration.engines import engine_url
from tests.integration.raw_client import create_index, put_index_template
from tests.integration.test_model_check_streams import RECORDED, _template, client, stream
from tests.support.tiny_onnx import tiny_encoder

__all__ = ["client", "stream"]  # fixtures shared with the model check's tests


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tiny_encoder(tmp_path_factory.mktemp("tiny") / "tiny32", 32))


def record(kind: str, name: str, model: str, *flags: str) -> Result:
    url = engine_url(kind)
    assert url is not None
    env = {
        "ESBRIDGE_EMBEDDING__MODEL": model,
        "ESBRIDGE_EMBEDDING__BACKEND": "onnx",
        "ESBRIDGE_EMBEDDING__PRECISION": "int8",
        "HF_HUB_OFFLINE": "1",
    }
    args = ["index", "record-model", "--url", url, "--engine", kind, "--index", name, *flags]
    return CliRunner().invoke(main, args, env=env)


def _records(engine: Engine, name: str) -> dict[str, str | None]:
    mappings = engine.get_mappings(name)
    return {index: getattr(recorded_identity(mappings[index], index), "name", None) for index in sorted(mappings)}


# k-NN's default space, on the lucene engine: its default (faiss) needs native libraries some builds lack
LUCENE_L2 = {"name": "hnsw", "engine": "lucene", "space_type": "l2"}


def _vector(kind: str, dimension: int) -> dict[str, Any]:
    if kind == "opensearch":
        return {"type": "knn_vector", "dimension": dimension, "method": LUCENE_L2}
    return {"type": "dense_vector", "dims": dimension, "index": True, "similarity": "cosine"}


@pytest.fixture
def two_indices(engine_kind: str, client: Any) -> Iterator[tuple[str, str, str]]:
    """An alias and the two indices behind it (as a rollover leaves them), deleted afterwards."""
    alias = f"esbridge-test-record-{uuid.uuid4().hex[:8]}"
    yield alias, f"{alias}-000001", f"{alias}-000002"
    client.indices.delete(index=f"{alias}-*", expand_wildcards="all")


def _create(kind: str, client: Any, index: str, alias: str, dimension: int, meta: dict[str, Any]) -> None:
    mappings = {"_meta": meta, "properties": {"vector": _vector(kind, dimension)}}
    aliases = {alias: {"is_write_index": index.endswith("2")}}
    create_index(kind, client, index, mappings=mappings, aliases=aliases, knn=True)


def test_record_model_records_every_index_behind_an_alias(
    engine_kind: str, engine: Engine, client: Any, two_indices: tuple[str, str, str], tiny: str
) -> None:
    alias, first, second = two_indices
    _create(engine_kind, client, first, alias, 32, {"owner": "search team"})
    _create(engine_kind, client, second, alias, 32, {})
    recorded = record(engine_kind, alias, tiny)
    assert recorded.exit_code == 0, recorded.output  # before: "expected one index behind ..., found 2"
    assert f"{first}, {second} behind {alias} now record {tiny}" in recorded.output
    assert _records(engine, alias) == {first: tiny, second: tiny}
    assert engine.get_mapping(first)["_meta"]["owner"] == "search team"
    assert recorded_identity(searched_mapping(engine, alias), alias) is not None
    again = record(engine_kind, alias, tiny)
    assert f"{alias} already records {tiny}" in again.output


def test_record_model_refuses_an_alias_over_indices_of_another_dimension_naming_each(
    engine_kind: str, engine: Engine, client: Any, two_indices: tuple[str, str, str], tiny: str
) -> None:
    alias, first, second = two_indices
    _create(engine_kind, client, first, alias, 16, {})
    _create(engine_kind, client, second, alias, 32, {})
    refused = record(engine_kind, alias, tiny, "--yes")
    assert refused.exit_code == 1
    assert f"{first}: 16-dimensional vectors; {second}: 32-dimensional vectors" in refused.output
    assert "nothing was changed" in refused.output
    assert _records(engine, alias) == {first: None, second: None}


def _template_meta(client: Any, name: str) -> dict[str, Any]:
    answer = client.indices.get_index_template(name=name)
    (entry,) = answer["index_templates"]
    return dict(entry["index_template"]["template"]["mappings"].get("_meta") or {})


def test_record_model_on_a_rolled_over_data_stream_records_each_backing_index_and_the_template_when_asked(
    engine_kind: str, engine: Engine, client: Any, stream: str, tiny: str
) -> None:
    put_index_template(
        engine_kind, client, stream, _template(engine_kind, f"{stream}*", {"owner": "logs"}, stream=True)
    )
    client.indices.create_data_stream(name=stream)
    client.indices.rollover(alias=stream)

    recorded = record(engine_kind, stream, tiny)
    assert recorded.exit_code == 0, recorded.output  # before: "expected one index behind ..., found 2"
    assert set(_records(engine, stream).values()) == {tiny}
    assert f"data stream {stream}'s next backing index takes its mapping _meta from index template {stream}" in (
        recorded.output
    )
    assert "which records no model" in recorded.output and "--in-template" in recorded.output
    assert _template_meta(client, stream) == {"owner": "logs"}  # told, not changed
    client.indices.rollover(alias=stream)
    with pytest.raises(errors.AmbiguousAlias, match="no model recorded"):  # what the warning said
        searched_mapping(engine, stream)

    in_template = record(engine_kind, stream, tiny, "--in-template")
    assert in_template.exit_code == 0, in_template.output
    assert f"index template {stream} now records {tiny}" in in_template.output
    assert "warning" not in in_template.output
    meta = _template_meta(client, stream)
    assert meta["owner"] == "logs" and meta[META_KEY]["name"] == tiny
    client.indices.rollover(alias=stream)
    records = _records(engine, stream)
    assert len(records) == 4 and set(records.values()) == {tiny}  # the new backing index too
    assert recorded_identity(searched_mapping(engine, stream), stream) is not None


def test_record_model_asks_before_replacing_another_model_in_a_data_stream_template(
    engine_kind: str, engine: Engine, client: Any, stream: str, tiny: str, tmp_path: Path
) -> None:
    other = str(tiny_encoder(tmp_path / "other32", 32))
    put_index_template(engine_kind, client, stream, _template(engine_kind, f"{stream}*", None, stream=True))
    client.indices.create_data_stream(name=stream)
    assert record(engine_kind, stream, other, "--in-template").exit_code == 0
    client.indices.rollover(alias=stream)

    declined = record(engine_kind, stream, tiny, "--in-template")
    assert declined.exit_code == 1
    assert "cancelled; nothing was changed" in declined.output
    for index in _records(engine, stream):
        assert f"{index} records {other}" in declined.output
    assert f"index template {stream} records {other}" in declined.output
    assert set(_records(engine, stream).values()) == {other}
    replaced = record(engine_kind, stream, tiny, "--in-template", "--yes")
    assert replaced.exit_code == 0, replaced.output
    assert set(_records(engine, stream).values()) == {tiny}
    assert _template_meta(client, stream)[META_KEY]["name"] == tiny


@pytest.fixture
def composed(engine_kind: str, client: Any) -> Iterator[str]:
    """An index template composed of a component template whose mapping _meta records a model's revision."""
    name = f"esbridge-test-record-template-{uuid.uuid4().hex[:8]}"
    component = {"mappings": {"_meta": {META_KEY: {"revision": "abc123"}, "team": "logs"}}}
    body = {"index_patterns": [f"{name}-*"], "priority": 500, "composed_of": [name], "template": {"mappings": {}}}
    if engine_kind == "opensearch":
        client.cluster.put_component_template(name=name, body={"template": component})
        client.indices.put_index_template(name=name, body=body)
    else:
        client.cluster.put_component_template(name=name, template=component)
        client.indices.put_index_template(name=name, **body)
    yield name
    try:
        client.indices.delete_index_template(name=name)
    finally:
        client.cluster.delete_component_template(name=name)


def test_a_template_is_recorded_only_when_the_index_it_makes_records_the_model(
    engine_kind: str, engine: Engine, composed: str
) -> None:
    """Elasticsearch merges the component's revision into the template's record, whose revision is null: the
    index the template makes would record a revision the model has not; OpenSearch takes the null."""
    assert isinstance(engine, IndexTemplates)
    if engine_kind == "opensearch":
        record_in_template(engine, composed, RECORDED)
    else:
        with pytest.raises(errors.ConfigError) as refused:
            record_in_template(engine, composed, RECORDED)
        assert "revision abc123" in str(refused.value)
        assert f"composed of ({composed}); record the model there too, or remove it there" in str(refused.value)
    resolved = engine.resolved_template_mappings(composed)
    assert resolved["_meta"]["team"] == "logs"
    made = recorded_identity(resolved, composed)
    assert made is not None and made.revision == (None if engine_kind == "opensearch" else "abc123")
