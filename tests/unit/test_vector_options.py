"""Vector encodings per engine and version, and their mappings."""

from __future__ import annotations

import pytest

from esbridge.engines.dialect import vector_field
from esbridge.engines.vector_options import apply_encoding, encoding_of, encodings, unavailable
from esbridge.mappings.schema import VECTOR_FIELD, IndexParameters, render_mappings


def test_encodings_follow_the_engine_versions() -> None:
    assert encodings("opensearch", "2.15.0") == ["float"]
    assert encodings("opensearch", "3.6.0") == ["float", "int8"]
    assert encodings("elasticsearch", "8.14.0") == ["float", "int8"]
    assert encodings("elasticsearch", "9.5.3") == ["float", "int8", "int4", "bbq"]


def test_unavailable_encodings_say_why() -> None:
    assert (
        unavailable("elasticsearch", "8.16.0", "bbq")
        == "bbq vectors need elasticsearch 8.18.0 or newer, this one is 8.16.0"
    )
    assert unavailable("opensearch", "3.6.0", "int4") == "opensearch has no int4 vector encoding; it offers float, int8"
    assert unavailable("opensearch", "3.6.0", "int8") is None


def test_opensearch_int8_is_the_lucene_scalar_quantizer() -> None:
    field = apply_encoding("opensearch", vector_field("opensearch", 384), "int8", "3.6.0")
    assert field["method"]["engine"] == "lucene"
    assert field["method"]["parameters"] == {
        "m": 16,
        "ef_construction": 100,
        "encoder": {"name": "sq", "parameters": {"bits": 7}},
    }
    assert encoding_of(field) == "int8"
    older = apply_encoding("opensearch", vector_field("opensearch", 384), "int8", "2.19.1")
    assert older["method"]["parameters"]["encoder"] == {"name": "sq"}


@pytest.mark.parametrize(("encoding", "kind"), [("int8", "int8_hnsw"), ("int4", "int4_hnsw"), ("bbq", "bbq_hnsw")])
def test_elasticsearch_encodings_are_index_option_types(encoding: str, kind: str) -> None:
    field = apply_encoding("elasticsearch", vector_field("elasticsearch", 384), encoding)  # type: ignore[arg-type]
    assert field["index_options"] == {"type": kind, "m": 16, "ef_construction": 100}
    assert encoding_of(field) == encoding


def test_float_renders_the_plain_hnsw_mapping() -> None:
    rendered = render_mappings("elasticsearch", IndexParameters())["properties"][VECTOR_FIELD]
    assert rendered["index_options"]["type"] == "hnsw" and encoding_of(rendered) == "float"
    assert encoding_of({}, "int8") == "int8"
