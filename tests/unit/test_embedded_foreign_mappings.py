"""Mappings made for a cluster that the embedded engine refuses, each for its own reason: runtime fields (accepted,
a filter on one matched nothing where a cluster computes its values), and Elasticsearch's dense_vector (refused as
a type, not as a text similarity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import RequestRejected


def test_an_index_with_runtime_fields_is_refused_naming_them(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        mapping = {
            "runtime": {"state": {"type": "keyword", "script": {"source": "emit('live')"}}},
            "properties": {"title": {"type": "text"}},
        }
        with pytest.raises(RequestRejected, match="runtime fields state: runtime fields are not implemented"):
            engine.create_index("h127-runtime", {"mappings": mapping})
        assert not engine.index_exists("h127-runtime")
        engine.create_index("h127-plain", {"mappings": {"runtime": {}, "properties": {"title": {"type": "text"}}}})
        assert engine.index_exists("h127-plain")
    finally:
        engine.close()


def test_a_dense_vector_with_a_similarity_is_refused_for_its_type(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        vector = {"type": "dense_vector", "dims": 4, "index": True, "similarity": "dot_product"}
        with pytest.raises(RequestRejected, match="field 'emb' has unsupported type 'dense_vector'"):
            engine.create_index("h127-dense", {"mappings": {"properties": {"emb": vector}}})
    finally:
        engine.close()
