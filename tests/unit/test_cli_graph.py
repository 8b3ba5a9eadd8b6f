"""``esbridge graph stats|neighbors`` on the embedded engine: an attached index's links are read through its
field map."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

INDEX = "graph-products"


@pytest.fixture
def attached(tmp_path: Path) -> Path:
    """An index esbridge did not create (ids in ``sku``, links in ``related``) and its settings file."""
    engine = EmbeddedEngine(Path(os.environ["ESBRIDGE_DATA_DIR"]))
    try:
        mapping = {"sku": {"type": "keyword"}, "name": {"type": "text"}, "related": {"type": "keyword"}}
        engine.create_index(INDEX, {"mappings": {"properties": mapping}})
        products: list[dict[str, Any]] = [
            {"sku": "p1", "name": "solar panel", "related": ["p2", "p3"]},
            {"sku": "p2", "name": "inverter", "related": ["p1"]},
            {"sku": "p3", "name": "battery"},
            {"sku": "p4", "name": "cable"},
        ]
        result = engine.bulk(INDEX, [BulkAction("index", f"_{n}", source) for n, source in enumerate(products)])
        assert list(result.failed) == []
        engine.refresh(INDEX)
    finally:
        engine.close()
    config = tmp_path / "esbridge.toml"
    config.write_text(
        f'[fields.{INDEX}]\ntext = {{ name = 1.0 }}\ncontent = ["name"]\nid = "sku"\nlinks = "related"\n',
        encoding="utf-8",
    )
    return config


def test_graph_stats_reads_an_attached_index_through_its_field_map(attached: Path) -> None:
    result = CliRunner().invoke(main, ["graph", "stats", "--json", "--index", INDEX, "--config", str(attached)])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert (stats["nodes"], stats["edges"], stats["components"]) == (4, 3, 2)


def test_graph_neighbors_of_an_attached_index_are_its_document_ids(attached: Path) -> None:
    args = ["graph", "neighbors", "p1", "--json", "--index", INDEX, "--config", str(attached)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"doc_id": "p1", "outgoing": {"p2": 1, "p3": 1}, "incoming": {"p2": 1}}


def test_graph_of_an_attached_index_without_links_says_so(attached: Path) -> None:
    attached.write_text(f'[fields.{INDEX}]\ntext = {{ name = 1.0 }}\nid = "sku"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["graph", "stats", "--index", INDEX, "--config", str(attached)])
    assert result.exit_code == 1
    assert "names no links field" in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def with_deleted() -> None:
    """Three documents of esbridge's schema; ``gone`` was deleted later (as the sidecar's DELETE does), and
    the documents that linked to it still name it."""
    engine = EmbeddedEngine(Path(os.environ["ESBRIDGE_DATA_DIR"]))
    try:
        IndexManager(engine, "esbridge", IndexParameters(dimension=4)).create()
        chunks = [
            ("a", ["b", "gone"]),
            ("b", ["a"]),
            ("c", ["gone"]),
            ("gone", ["a"]),
        ]
        actions = [
            BulkAction(
                "index",
                f"{doc_id}#0",
                {"chunk_id": f"{doc_id}#0", "doc_id": doc_id, "chunk_index": 0, "title": doc_id, "links": links},
            )
            for doc_id, links in chunks
        ]
        assert list(engine.bulk("esbridge", actions).failed) == []
        assert list(engine.bulk("esbridge", [BulkAction("delete", "gone#0")]).failed) == []
        engine.refresh("esbridge")
    finally:
        engine.close()


@pytest.mark.usefixtures("with_deleted")
def test_graph_stats_counts_only_documents_of_the_index_and_names_links_to_missing_ones() -> None:
    result = CliRunner().invoke(main, ["graph", "stats", "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert (stats["nodes"], stats["edges"], stats["components"], stats["links_to_missing"]) == (3, 2, 2, 2)
    text = CliRunner().invoke(main, ["graph", "stats"])
    assert "documents 3, links 2" in text.output
    assert "2 links to documents not in the index" in text.output


@pytest.mark.usefixtures("with_deleted")
def test_graph_neighbors_of_a_deleted_document_is_refused() -> None:
    result = CliRunner().invoke(main, ["graph", "neighbors", "gone"])
    assert result.exit_code == 1
    assert "'gone' is not a document of the graph" in result.output
    assert json.loads(CliRunner().invoke(main, ["graph", "neighbors", "a", "--json"]).stdout)["outgoing"] == {"b": 1}
