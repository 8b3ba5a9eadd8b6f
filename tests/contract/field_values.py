"""What every engine takes and refuses in boolean, number and vector fields, and what it finds for what it took.
Mixed into the engine contract classes, which provide ``engine`` and ``prefix``."""

from __future__ import annotations

from typing import Any

from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.dialect import index_settings
from esbridge.mappings.lifecycle import IndexManager
from esbridge.query import bodies
from esbridge.query.models import Filters
from tests.contract.records import CHUNKS, PARAMS, ids

PROPERTIES = {
    "flag": {"type": "boolean"},
    "small": {"type": "short"},
    "count": {"type": "integer"},
    "big": {"type": "long"},
    "ratio": {"type": "float"},
    "half": {"type": "half_float"},
    "exact": {"type": "double"},
}

TAKEN: dict[str, dict[str, Any]] = {
    "true": {"flag": True},
    "true-text": {"flag": "true"},
    "false-text": {"flag": "false"},
    "empty-flag": {"flag": ""},  # (false)
    "flags": {"flag": [True, "false"]},
    "short-max": {"small": 32767},
    "int-max": {"count": 2**31 - 1},
    "int-text": {"count": " 12 "},
    "int-fraction": {"count": 1.9},
    "long-max": {"big": 2**63 - 1},
    "float-max": {"ratio": 3.4e38},
    "half-max": {"half": 65504},
    "double-large": {"exact": 1e300},
}

REFUSED: dict[str, dict[str, Any]] = {
    "yes": {"flag": "yes"},
    "capital-true": {"flag": "True"},
    "one": {"flag": 1},
    "zero": {"flag": 0},
    "short-over": {"small": 40000},
    "int-over": {"count": 2**31},
    "int-over-text": {"count": "2147483648"},
    "int-over-fraction": {"count": 2147483647.5},
    "long-over": {"big": 2**70},
    "float-over": {"ratio": 1e39},
    "half-over": {"half": 70000},
    "float-nan": {"ratio": "NaN"},
    "float-infinite": {"ratio": "Infinity"},
    "double-infinite": {"exact": "-Infinity"},
    "underscores": {"ratio": "1_000"},
}


class FieldValuesContract:
    def test_booleans_and_numbers_are_taken_and_refused_alike(self, engine: Engine, prefix: str) -> None:
        index = f"{prefix}-values"
        engine.create_index(index, {"settings": index_settings(engine.dialect), "mappings": {"properties": PROPERTIES}})
        written = {**TAKEN, **REFUSED}
        result = engine.bulk(index, [BulkAction("index", key, document) for key, document in written.items()])
        assert sorted(result.succeeded) == sorted(TAKEN)
        assert {failure.id: failure.status for failure in result.failed} == dict.fromkeys(REFUSED, 400)
        assert all("failed to parse field [" in failure.reason for failure in result.failed)
        engine.refresh(index)

        def found(query: dict[str, Any]) -> list[str]:
            return sorted(hit.id for hit in engine.search(index, {"size": 50, "query": query}).hits)

        assert found({"term": {"flag": True}}) == ["flags", "true", "true-text"]
        assert found({"term": {"flag": False}}) == ["empty-flag", "false-text", "flags"]
        assert found({"range": {"count": {"gte": 12}}}) == ["int-max", "int-text"]

    def test_vectors_a_cluster_refuses_are_refused_and_knn_answers_after_them(
        self, engine: Engine, prefix: str
    ) -> None:
        IndexManager(engine, prefix, PARAMS).create()
        refused = {"empty": [], "booleans": [True, False, False, False], "beyond-float": [1e39, 0.0, 0.0, 0.0]}
        actions = [BulkAction("index", key, {**CHUNKS["fox#0"], "vector": vector}) for key, vector in refused.items()]
        result = engine.bulk(prefix, [*actions, BulkAction("index", "astro#0", CHUNKS["astro#0"])])
        assert list(result.succeeded) == ["astro#0"]
        assert {failure.id: failure.status for failure in result.failed} == dict.fromkeys(refused, 400)
        engine.refresh(prefix)
        body = bodies.knn_body(engine.dialect, [0, 0, 1, 0], k=3, filters=Filters(), num_candidates=20)
        assert ids(engine.search(prefix, body)) == ["astro#0"]
