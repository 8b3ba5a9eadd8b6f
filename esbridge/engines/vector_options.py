"""Quantized vector storage per engine and version: which encodings exist, and how each is mapped.

- ``float``: 32-bit floats, HNSW over them (both engines; the default).
- ``int8``: scalar quantization to one byte per dimension, HNSW over the bytes, floats kept on disk for
  rescoring. OpenSearch: the lucene engine's ``encoder: sq`` (k-NN 2.16, "Lucene scalar quantization");
  Elasticsearch: ``index_options.type: int8_hnsw`` (8.12; the default for new fields from 8.14).
- ``int4``: half a byte per dimension; Elasticsearch ``int4_hnsw`` (8.15).
- ``bbq``: Better Binary Quantization, one bit per dimension with corrective terms; Elasticsearch
  ``bbq_hnsw`` (8.18 / 9.0 generally available).

OpenSearch's ``mode: on_disk`` and ``compression_level`` quantize through the faiss engine (binary
quantization), whose native libraries the k-NN plugin jars from Maven Central do not carry; on such a
build they are refused, and the lucene engine's int8 is what is available.
"""

from __future__ import annotations

from typing import Literal

from esbridge.engines.base import JSON, Dialect
from esbridge.engines.capabilities import parse_version

VectorEncoding = Literal["float", "int8", "int4", "bbq"]

# (dialect, encoding) -> first version with it; absent = not offered by that engine.
_SINCE: dict[tuple[Dialect, VectorEncoding], str] = {
    ("opensearch", "float"): "1.0.0",
    ("opensearch", "int8"): "2.16.0",
    ("elasticsearch", "float"): "8.0.0",
    ("elasticsearch", "int8"): "8.12.0",
    ("elasticsearch", "int4"): "8.15.0",
    ("elasticsearch", "bbq"): "8.18.0",
}
_ES_TYPES: dict[VectorEncoding, str] = {"float": "hnsw", "int8": "int8_hnsw", "int4": "int4_hnsw", "bbq": "bbq_hnsw"}


def encodings(dialect: Dialect, version: str) -> list[VectorEncoding]:
    """The encodings an engine of this dialect and version can index, in the order of ``VectorEncoding``."""
    found = parse_version(version)
    return [encoding for (kind, encoding), since in _SINCE.items() if kind == dialect and found >= parse_version(since)]


def unavailable(dialect: Dialect, version: str, encoding: VectorEncoding) -> str | None:
    """Why ``encoding`` cannot be indexed on this engine, or None when it can."""
    since = _SINCE.get((dialect, encoding))
    if since is None:
        return (
            f"{dialect} has no {encoding} vector encoding; it offers "
            f"{', '.join(e for (kind, e) in _SINCE if kind == dialect)}"
        )
    if parse_version(version) < parse_version(since):
        return f"{encoding} vectors need {dialect} {since} or newer, this one is {version}"
    return None


def apply_encoding(dialect: Dialect, field: JSON, encoding: VectorEncoding, version: str = "") -> JSON:
    """``field`` (esbridge's HNSW vector mapping) with ``encoding``'s storage; ``float`` leaves it as it is.

    OpenSearch 3.6 requires the scalar quantizer's ``bits`` (7: Lucene's 7-bit quantization, one byte per
    dimension; 1: binary) on new indices, and earlier versions know no such parameter (they quantize to 7 bits).
    """
    if encoding == "float":
        return field
    if dialect == "opensearch":
        if encoding != "int8":
            raise ValueError(f"OpenSearch's lucene engine has no {encoding} encoding")
        encoder: JSON = {"name": "sq"}
        if not version or parse_version(version) >= parse_version("3.6.0"):
            encoder["parameters"] = {"bits": 7}
        method = dict(field["method"])
        method["parameters"] = {**method.get("parameters", {}), "encoder": encoder}
        return {**field, "method": method}
    options = {**field.get("index_options", {}), "type": _ES_TYPES[encoding]}
    return {**field, "index_options": options}


def encoding_of(field: JSON, fallback: VectorEncoding = "float") -> VectorEncoding:
    """The encoding a live vector mapping was made with (``fallback`` when the field is not esbridge's)."""
    if not field:
        return fallback
    encoder = field.get("method", {}).get("parameters", {}).get("encoder", {})
    if isinstance(encoder, dict) and encoder.get("name") == "sq":
        return "int8"
    kind = field.get("index_options", {}).get("type")
    for encoding, es_type in _ES_TYPES.items():
        if kind == es_type:
            return encoding
    return "float"
