"""The keys of a mapping's root object on the embedded engine: unknown ones refused as OpenSearch refuses them,
known ones it does not implement refused naming them unless leaving them unread changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import RequestRejected
from esbridge.mappings.schema import IndexParameters, render_index

PROPERTIES = {"title": {"type": "text"}}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def _create(engine: EmbeddedEngine, name: str, **root: Any) -> None:
    engine.create_index(name, {"mappings": {"properties": PROPERTIES, **root}})


def test_an_unknown_root_key_is_refused_in_opensearch_words(engine: EmbeddedEngine) -> None:
    with pytest.raises(RequestRejected, match=r"Root mapping definition has unsupported parameters:  \[foo : 1\]"):
        _create(engine, "h133-foo", foo=1)
    # As OpenSearch 3.6 words them: sorted, each value as Java writes it.
    with pytest.raises(RequestRejected, match=r"unsupported parameters:  \[_all : \{enabled=true\}\] \[x : y\]$"):
        _create(engine, "h133-old", x="y", _all={"enabled": True})
    with pytest.raises(RequestRejected, match=r"Failed to parse mapping \[_doc\]: _id is not configurable"):
        _create(engine, "h133-old", _id={})
    assert not engine.index_exists("h133-foo")
    assert not engine.index_exists("h133-old")


@pytest.mark.parametrize(
    ("root", "named"),
    [
        ({"_source": {"enabled": False}}, r"mapping _source \{\"enabled\": false\} is not implemented"),
        ({"_source": {"excludes": ["title"]}}, r"mapping _source \{\"excludes\": \[\"title\"\]\}"),
        ({"_routing": {"required": True}}, r"mapping _routing \{\"required\": true\} is not implemented"),
        ({"enabled": False}, r"mapping enabled false is not implemented"),
        ({"_data_stream_timestamp": {"enabled": True}}, r"mapping _data_stream_timestamp \{\"enabled\": true\}"),
        ({"composite": {"tree": {"type": "star_tree"}}}, r"mapping composite \{\"tree\": "),
        ({"dynamic": "runtime"}, r"dynamic 'runtime' is not implemented by the embedded engine"),
        ({"derived": {"d": {"type": "keyword", "script": "emit('x')"}}}, r"derived fields d: derived fields are not"),
        (
            {"dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}}]},
            r"dynamic_templates \(strings\) are not implemented by the embedded engine: a field they would map is "
            r"kept in _source only",
        ),
        (
            {"dynamic": True, "dynamic_templates": [{"ids": {"match": "*_id", "mapping": {"type": "keyword"}}}]},
            r"dynamic_templates \(ids\)",
        ),
    ],
)
def test_a_known_key_the_engine_would_leave_unread_is_refused_naming_it(
    engine: EmbeddedEngine, root: dict[str, Any], named: str
) -> None:
    with pytest.raises(RequestRejected, match=named):
        _create(engine, "h133-known", **root)
    assert not engine.index_exists("h133-known")


@pytest.mark.parametrize(
    "root",
    [
        {"_source": {"enabled": True}},
        {"_source": {}},
        {"_source": {"includes": [], "excludes": []}},
        {"_routing": {"required": False}},
        {"_routing": {"required": "false"}},  # as a cluster's mapping reads back
        {"enabled": True},
        {"dynamic": "false", "date_detection": False, "numeric_detection": True, "dynamic_date_formats": ["yyyy"]},
        {"dynamic": "strict", "dynamic_templates": [{"ids": {"match": "*_id", "mapping": {"type": "keyword"}}}]},
        {"dynamic": False, "dynamic_templates": [{"ids": {"match": "*_id", "mapping": {"type": "keyword"}}}]},
        {"dynamic_templates": []},
        {"_doc_count": {}, "composite": {}, "_data_stream_timestamp": {"enabled": False}},
        {"_meta": {"owner": "me"}, "runtime": {}},
    ],
)
def test_a_key_whose_value_changes_nothing_is_taken(engine: EmbeddedEngine, root: dict[str, Any]) -> None:
    _create(engine, "h133-taken", **root)
    engine.bulk("h133-taken", [BulkAction("index", "1", {"title": "hello world"})])
    engine.refresh("h133-taken")
    hits = engine.search("h133-taken", {"query": {"match": {"title": "hello"}}}).hits
    assert [hit.id for hit in hits] == ["1"]


def test_the_mapping_esbridge_writes_is_taken(engine: EmbeddedEngine) -> None:
    engine.create_index("h133-own", render_index(engine.dialect, IndexParameters()))
    assert engine.get_mapping("h133-own")["dynamic"] == "strict"
