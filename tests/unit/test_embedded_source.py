"""The embedded engine's ``_source`` filtering: includes, excludes, wildcards and paths inside objects, the
same answer for every search that asks the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine

BODY = {"mappings": {"properties": {"t": {"type": "keyword"}, "meta": {"properties": {"a": {"type": "keyword"}}}}}}
DOCS: dict[str, dict[str, Any]] = {
    "1": {"t": "x", "meta": {"a": "p", "b": "q"}, "tail": 1},
    "2": {"t": "y", "meta": {"b": "r"}, "title": "z"},
}


def _sources(engine: EmbeddedEngine, spec: Any) -> dict[str, Any]:
    hits = engine.search("idx", {"query": {"match_all": {}}, "_source": spec}).hits
    return {hit.id: hit.source for hit in hits}


def test_source_filtering_keeps_what_is_asked_for_search_after_search(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    try:
        engine.create_index("idx", BODY)
        engine.bulk("idx", [BulkAction("index", doc_id, source) for doc_id, source in DOCS.items()])
        for _ in range(2):
            assert _sources(engine, ["t"]) == {"1": {"t": "x"}, "2": {"t": "y"}}
            assert _sources(engine, ["meta.a"]) == {"1": {"meta": {"a": "p"}}, "2": {}}
            assert _sources(engine, ["t*"]) == {"1": {"t": "x", "tail": 1}, "2": {"t": "y", "title": "z"}}
            assert _sources(engine, {"includes": ["t", "meta.a"], "excludes": ["tail"]}) == {
                "1": {"t": "x", "meta": {"a": "p"}},
                "2": {"t": "y"},
            }
            assert _sources(engine, {"excludes": ["meta*"]}) == {
                "1": {"t": "x", "tail": 1},
                "2": {"t": "y", "title": "z"},
            }
            assert _sources(engine, True) == DOCS
    finally:
        engine.close()
