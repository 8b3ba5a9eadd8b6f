"""The query model's check on names over several backing indices, on both engines: a data stream and an alias
after rollovers, and a pattern. Every backing index's mapping is read; they are searched when they record one
model, and refused naming each when they do not."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from esbridge import errors
from esbridge.embeddings.identity import META_KEY, identity_of
from esbridge.engines import Engine
from esbridge.ingest.model_record import record_model
from esbridge.query.model_check import ModelGuard, searched_mapping
from tests.integration.raw_client import put_index_template, templated_alias
from tests.integration.test_attach import _client
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder

RECORDED = identity_of(HashingEmbedder())


def _template(kind: str, pattern: str, meta: Mapping[str, Any] | None, *, stream: bool) -> dict[str, Any]:
    vector = (
        {"type": "knn_vector", "dimension": 32, "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2"}}
        if kind == "opensearch"
        else {"type": "dense_vector", "dims": 32, "index": True, "similarity": "cosine"}
    )
    mappings: dict[str, Any] = {"properties": {"@timestamp": {"type": "date"}, "vector": vector}}
    if meta is not None:
        mappings["_meta"] = dict(meta)
    template: dict[str, Any] = {"mappings": mappings}
    if kind == "opensearch":
        template["settings"] = {"index": {"knn": True}}
    return {
        "index_patterns": [pattern],
        "priority": 500,
        "template": template,
        **({"data_stream": {}} if stream else {}),
    }


def _check(engine: Engine, name: str, embedder: HashingEmbedder) -> str | None:
    async def read(ends: float) -> Mapping[str, Any]:
        return searched_mapping(engine, name)

    return asyncio.run(ModelGuard(name, identity_of(embedder), read).check())


@pytest.fixture
def client(engine_kind: str) -> Iterator[Any]:
    made = _client(engine_kind)
    yield made
    made.close()


@pytest.fixture
def stream(engine_kind: str, client: Any) -> Iterator[str]:
    """A data stream's name, its template and stream deleted afterwards; skipped on a build without data streams."""
    try:
        client.indices.get_data_stream(name="*")
    except Exception as exc:  # (each client's own error type) a build without the data streams module
        if "no handler found" not in str(exc):
            raise
        pytest.skip(f"this {engine_kind} build lacks data streams ({exc})")
    name = f"esbridge-test-model-stream-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        client.indices.delete_data_stream(name=name)
    finally:
        client.indices.delete_index_template(name=name)


def test_a_data_stream_rolled_over_twice_is_checked_against_every_backing_index(
    engine_kind: str, engine: Engine, client: Any, stream: str
) -> None:
    put_index_template(
        engine_kind, client, stream, _template(engine_kind, f"{stream}*", {META_KEY: RECORDED.to_meta()}, stream=True)
    )
    client.indices.create_data_stream(name=stream)
    client.indices.rollover(alias=stream)
    client.indices.rollover(alias=stream)
    assert len(engine.get_mappings(stream)) == 3
    assert _check(engine, stream, HashingEmbedder()) is None  # before: "not checked ...: expected one index behind"
    with pytest.raises(errors.ModelMismatch, match="hashing-32"):
        _check(engine, stream, OtherHashingEmbedder())


def test_a_data_stream_whose_new_backing_index_records_no_model_is_refused_naming_each(
    engine_kind: str, engine: Engine, client: Any, stream: str
) -> None:
    put_index_template(engine_kind, client, stream, _template(engine_kind, f"{stream}*", None, stream=True))
    client.indices.create_data_stream(name=stream)
    record_model(engine, stream, RECORDED)  # reaches the stream's one backing index, not its template
    client.indices.rollover(alias=stream)
    first, second = sorted(engine.get_mappings(stream))
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched_mapping(engine, stream)
    message = str(refused.value)
    assert message.startswith(f"data stream {stream!r} points to several indices whose vectors are not of one model")
    assert f"{first}: hashing-32 (" in message and f"{second}: no model recorded, 32-dimensional vectors" in message
    assert "record the model in the template's mapping _meta (esbridge_model)" in message


@pytest.fixture
def rolled(engine_kind: str, client: Any) -> Iterator[str]:
    """An alias whose indices an index template recording hashing-32 makes, rolled over twice."""
    alias = f"esbridge-test-model-rolled-{uuid.uuid4().hex[:8]}"
    template = _template(engine_kind, f"{alias}-*", {META_KEY: RECORDED.to_meta()}, stream=False)
    with templated_alias(engine_kind, client, alias, template, rollovers=2):
        yield alias


def test_an_alias_rolled_over_twice_is_checked_against_every_index(engine: Engine, rolled: str) -> None:
    assert len(engine.get_mappings(rolled)) == 3
    assert _check(engine, rolled, HashingEmbedder()) is None
    with pytest.raises(errors.ModelMismatch, match="hashing-32"):
        _check(engine, rolled, OtherHashingEmbedder())


def test_a_pattern_that_matches_no_index_is_not_found(engine: Engine) -> None:
    pattern = f"esbridge-test-model-none-{uuid.uuid4().hex[:8]}-*"
    with pytest.raises(errors.IndexNotFound, match="no index matches"):  # before: "expected one index ..., found 0"
        searched_mapping(engine, pattern)
