"""The embedded engine stores numbers as the clusters do: a fraction written to a whole-number field is dropped, and
``float``, ``half_float`` and ``scaled_float`` are searched, sorted and filtered at the precision the clusters store
them at, while ``_source`` keeps what was written."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines import BulkAction, Engine
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineError
from tests.unit.test_embedded_float_precision import DOCS
from tests.unit.test_embedded_float_precision import MAPPING as PRECISION_MAPPING
from tests.unit.test_embedded_float_precision import QUERIES as PRECISION_QUERIES
from tests.unit.test_embedded_float_precision import REFUSED as PRECISION_REFUSED


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


WHOLE_VALUES: list[Any] = [5.7, -5.7, "5.7", 5, 6, "5.2e0"]
WHOLE_QUERIES: list[dict[str, Any]] = [
    {"term": {"n": 5}},
    {"term": {"n": 5.7}},
    {"term": {"n": -5}},
    {"range": {"n": {"gte": 5.5}}},
    {"range": {"n": {"lt": 5.5}}},
    {"terms": {"n": [5, 5.7]}},
]


def _whole_answers(engine: Engine) -> list[Any]:
    name = f"parity-whole-{uuid.uuid4().hex[:8]}"
    engine.create_index(name, {"mappings": {"properties": {"n": {"type": "integer"}}}})
    try:
        engine.bulk(name, [BulkAction("index", f"v{n}", {"n": value}) for n, value in enumerate(WHOLE_VALUES)])
        engine.refresh(name)
        answers: list[Any] = [sorted(hit.id for hit in engine.search(name, {"query": q}).hits) for q in WHOLE_QUERIES]
        body = {"query": {"match_all": {}}, "sort": [{"n": "asc"}]}
        answers.append([hit["sort"][0] for hit in engine.search(name, body).raw["hits"]["hits"]])
        return answers
    finally:
        engine.delete_index(name, missing_ok=True)


def test_a_fraction_written_to_a_whole_number_field_is_dropped_as_on_the_clusters(
    engine: Engine, embedded: EmbeddedEngine
) -> None:
    assert _whole_answers(embedded) == _whole_answers(engine)


def _precision_answers(engine: Engine, scaled: bool) -> list[Any]:
    """``scaled``: with the scaled_float field (Elasticsearch has no scaled_float without mapper-extras)."""
    mapping = {key: spec for key, spec in PRECISION_MAPPING.items() if scaled or key != "s"}
    name = f"parity-precision-{uuid.uuid4().hex[:8]}"
    engine.create_index(name, {"mappings": {"properties": mapping}})
    try:
        docs = [BulkAction("index", key, {k: v for k, v in doc.items() if k in mapping}) for key, doc in DOCS.items()]
        assert not engine.bulk(name, docs).failed
        engine.refresh(name)
        answers: list[Any] = [
            (query, sorted(hit.id for hit in engine.search(name, {"query": query}).hits))
            for query, _ in PRECISION_QUERIES
            if scaled or "s" not in next(iter(query.values()))
        ]
        for field in mapping:
            hits = engine.search(name, {"sort": [{field: "asc"}]}).raw["hits"]["hits"]
            # a cluster writes a float's sort value in its shortest single-precision form (0.099975586)
            single = field in ("h", "f")
            found = [
                (np.float32(hit["sort"][0]) if single else hit["sort"][0], hit["_id"], hit["_source"]) for hit in hits
            ]
            assert [value for value, *_ in found] == sorted(value for value, *_ in found)
            answers.append(sorted(found, key=lambda each: (each[0], each[1])))
        return answers
    finally:
        engine.delete_index(name, missing_ok=True)


def test_numbers_are_searched_at_the_precision_the_clusters_store(engine: Engine, embedded: EmbeddedEngine) -> None:
    scaled = engine.dialect == "opensearch"
    assert _precision_answers(embedded, scaled) == _precision_answers(engine, scaled)


def test_a_number_beyond_its_type_is_refused_in_opensearchs_words(engine: Engine, embedded: EmbeddedEngine) -> None:
    if engine.dialect != "opensearch":
        pytest.skip("OpenSearch is the reference where the clusters differ (Elasticsearch finds nothing)")
    for each in (engine, embedded):
        name = f"parity-finite-{uuid.uuid4().hex[:8]}"
        each.create_index(name, {"mappings": {"properties": PRECISION_MAPPING}})
        try:
            for query, shown in PRECISION_REFUSED:
                with pytest.raises(EngineError, match=re.escape(shown)):
                    each.search(name, {"query": query})
        finally:
            each.delete_index(name, missing_ok=True)
