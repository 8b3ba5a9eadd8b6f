"""Recording a model by hand (``esbridge index record-model``) in every index behind a name: which indices it
records, and the refusals that name each index; on the embedded engine, which has no index templates, an alias
over two versions. The engines' data streams and templates are in tests/integration/test_record_model_streams.py."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge import errors
from esbridge.embeddings.identity import META_KEY, identity_of, recorded_identity
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.index_templates import not_a_stream, stream_template, template_body
from esbridge.ingest.record_by_hand import plan_record, record_by_hand
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder

MODEL = identity_of(HashingEmbedder())
OTHER = identity_of(OtherHashingEmbedder())


def mapping(dimension: int | None, recorded: Any = None) -> dict[str, Any]:
    properties = {} if dimension is None else {"vector": {"type": "knn_vector", "dimension": dimension}}
    meta = {} if recorded is None else {META_KEY: recorded.to_meta()}
    return {"_meta": meta, "properties": properties}


def test_each_index_is_planned_by_what_it_records() -> None:
    plan = plan_record("logs", {"b": mapping(32, OTHER), "a": mapping(32), "c": mapping(32, MODEL)}, MODEL, "vector")
    assert (plan.already, plan.unrecorded, plan.replaced) == (("c",), ("a",), (("b", OTHER),))
    assert plan.to_record == ["a", "b"]


def test_indices_of_another_dimension_are_refused_naming_each() -> None:
    with pytest.raises(errors.ConfigError) as refused:
        plan_record("logs", {"logs-1": mapping(16), "logs-2": mapping(32)}, MODEL, "vector")
    assert "not every index behind 'logs' maps that dimension" in str(refused.value)
    assert "(logs-1: 16-dimensional vectors; logs-2: 32-dimensional vectors)" in str(refused.value)


def test_one_index_of_another_dimension_is_refused_as_before() -> None:
    with pytest.raises(errors.ConfigError, match="makes 32-dimensional vectors but index notes maps 16: it cannot"):
        plan_record("notes", {"notes": mapping(16)}, MODEL, "vector")


def test_an_index_without_the_vector_field_is_named_among_several() -> None:
    with pytest.raises(errors.ConfigError, match=r"^index logs-2: the field map's vector field vector is not in"):
        plan_record("logs", {"logs-1": mapping(32), "logs-2": mapping(None)}, MODEL, "vector")


def test_indices_recording_different_models_are_refused_naming_each() -> None:
    third = MODEL.model_copy(update={"name": "third-model"})
    with pytest.raises(errors.ConfigError) as refused:
        plan_record("logs", {"logs-1": mapping(32, OTHER), "logs-2": mapping(32, third)}, MODEL, "vector")
    message = str(refused.value)
    assert message.startswith("the indices behind 'logs' record different models (logs-1: other-hashing-32 (")
    assert "; logs-2: third-model (" in message and "--index INDEX" in message


def test_a_name_over_no_index_is_refused() -> None:
    with pytest.raises(errors.ConfigError, match="no index matches 'logs-\\*'"):
        plan_record("logs-*", {}, MODEL, "vector")


def two_versions(engine: EmbeddedEngine) -> None:
    IndexManager(engine, "notes", IndexParameters(dimension=32)).create()
    engine.create_index("notes-v2", IndexManager(engine, "notes", IndexParameters(dimension=32)).wanted_body())
    engine.put_meta("notes-v2", {**engine.get_mapping("notes-v2")["_meta"], "owner": "search team"})
    engine.update_aliases([{"add": {"index": "notes-v2", "alias": "notes"}}])


def test_an_alias_over_two_embedded_indices_records_both_keeping_the_rest_of_meta(engine: EmbeddedEngine) -> None:
    two_versions(engine)
    asked: list[str] = []
    done = record_by_hand(engine, "notes", MODEL, "vector", in_template=True, confirm=asked.append)
    assert asked == [] and done.warnings == []
    first, second = sorted(engine.get_mappings("notes"))
    assert done.done == [f"{first}, {second} behind notes now record {MODEL.describe()}"]
    for index, held in engine.get_mappings("notes").items():
        assert recorded_identity(held, index) == MODEL
    assert engine.get_mapping("notes-v2")["_meta"]["owner"] == "search team"


def test_replacing_another_models_record_is_asked_naming_each_index(engine: EmbeddedEngine) -> None:
    two_versions(engine)
    record_by_hand(engine, "notes", OTHER, "vector", in_template=False, confirm=lambda question: None)

    def decline(question: str) -> None:
        raise errors.ConfigError(question)

    with pytest.raises(errors.ConfigError) as declined:
        record_by_hand(engine, "notes", MODEL, "vector", in_template=False, confirm=decline)
    for index in engine.get_mappings("notes"):
        assert f"{index} records {OTHER.describe()}" in str(declined.value)
        assert recorded_identity(engine.get_mapping(index), index) == OTHER


def test_a_data_streams_template_is_read_from_its_answer() -> None:
    answer = {"data_streams": [{"name": "logs", "template": "logs-template", "indices": []}]}
    assert stream_template(answer, "logs") == "logs-template"
    assert stream_template({"data_streams": []}, "logs") is None


def test_a_template_read_back_loses_the_dates_a_put_refuses() -> None:
    entry = {"index_patterns": ["logs*"], "template": {}, "created_date_millis": 1, "modified_date_millis": 2}
    answer = {"index_templates": [{"name": "logs", "index_template": entry}]}
    assert template_body(answer, "logs", url="http://x") == {"index_patterns": ["logs*"], "template": {}}
    with pytest.raises(errors.IndexNotFound, match="no index template named 'other'"):
        template_body(answer, "other", url="http://x")


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [(404, "no such index", True), (400, "no handler found for uri [/_data_stream/x]", True), (403, "denied", False)],
)
def test_only_a_missing_stream_or_module_reads_as_no_data_stream(status: int, text: str, expected: bool) -> None:
    assert (
        not_a_stream(errors.EngineError(text, url="http://x", operation="read data stream", status=status)) is expected
    )
