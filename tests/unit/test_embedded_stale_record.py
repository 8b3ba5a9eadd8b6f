"""A search that read its index's record before a mapping change commits must not bring the old full-text layout
back: that rebuilt the old layout from the database, deleted the new one, and the next search rebuilt the new one
(a whole rebuild each time, during which BM25 finds only what is committed so far)."""

from __future__ import annotations

from pathlib import Path

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.lexical_layout import Layout
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters


def test_a_record_read_before_a_mapping_change_keeps_the_new_full_text_layout(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        IndexManager(engine, "notes", IndexParameters(dimension=2)).create()
        (name,) = engine.alias_targets("notes")
        engine.bulk(
            "notes",
            [
                BulkAction("index", f"d{i}", {"doc_id": f"d{i}", "body": "alpha", "vector": [1.0, float(i)]})
                for i in range(5)
            ],
        )
        engine.search("notes", bodies.bm25_body("opensearch", "alpha", size=10, filters=Filters()))
        stale = engine._store.index(name)  # what a search read just before the mapping changed
        assert stale is not None

        engine.put_mapping(name, {"summary": {"type": "text"}})
        current = engine._store.index(name)
        assert current is not None
        new_layout = Layout(current.schema)
        assert new_layout.digest != Layout(stale.schema).digest
        lexical = tmp_path / "data" / "lexical"
        new_folder = lexical / f"{current.id}-{new_layout.digest}"
        assert new_folder.is_dir()

        handles = engine._shared.ready(engine._store, stale)

        assert handles.lexical.layout.digest == new_layout.digest
        assert sorted(path.name for path in lexical.glob(f"{current.id}-*")) == [new_folder.name]
        found = engine.search("notes", bodies.bm25_body("opensearch", "alpha", size=10, filters=Filters()))
        assert len(found.hits) == 5
    finally:
        engine.close()
