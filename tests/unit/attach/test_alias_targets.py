"""An attached alias over several indices: read as one when they map alike, refused naming what differs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.attach.guard import preflight
from esbridge.attach.proposal import propose
from esbridge.attach.targets import attached_mapping, common_mapping
from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine

MONTHLY = {"properties": {"body": {"type": "text"}, "tags": {"type": "keyword"}, "updated": {"type": "date"}}}


def test_indices_mapped_alike_share_their_mapping_whatever_their_meta() -> None:
    mappings = {"logs-10": {**MONTHLY, "_meta": {"month": 10}}, "logs-11": {**MONTHLY, "_meta": {"month": 11}}}
    assert common_mapping("logs", mappings)["properties"] == MONTHLY["properties"]


def test_a_field_mapped_two_ways_is_named_with_each_indexs_type() -> None:
    other = {"properties": {**MONTHLY["properties"], "tags": {"type": "text"}}}
    with pytest.raises(
        errors.AmbiguousAlias,
        match=r"'logs' covers 2 indices \(logs-10, logs-11\) whose mappings differ: "
        r"tags \(logs-10: keyword, logs-11: text\)\. A field map is read against one mapping",
    ):
        common_mapping("logs", {"logs-10": MONTHLY, "logs-11": other})


def test_a_field_one_index_lacks_or_maps_with_another_format_is_named() -> None:
    later = {"properties": {**MONTHLY["properties"], "updated": {"type": "date", "format": "epoch_second"}}}
    later["properties"]["status"] = {"type": "keyword"}
    with pytest.raises(errors.AmbiguousAlias) as refused:
        common_mapping("logs", {"logs-10": MONTHLY, "logs-11": later})
    said = str(refused.value)
    assert "status (logs-10: absent, logs-11: keyword)" in said
    assert "updated (logs-10: {'type': 'date'}, logs-11: {'type': 'date', 'format': 'epoch_second'})" in said


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def test_an_alias_over_indices_mapped_alike_is_proposed_a_field_map(engine: EmbeddedEngine) -> None:
    for name in ("logs-10", "logs-11"):
        engine.create_index(name, {"mappings": MONTHLY})
    engine.update_aliases([{"add": {"index": name, "alias": "logs"}} for name in ("logs-10", "logs-11")])
    fields = propose(attached_mapping(engine, "logs")).fields
    assert fields is not None
    assert (fields.text, fields.tags, fields.date) == ({"body": 1.0}, "tags", "updated")
    assert attached_mapping(engine, "logs-10")["properties"] == MONTHLY["properties"]


def test_a_search_of_such_an_alias_reads_the_shared_mapping(engine: EmbeddedEngine, tmp_path: Path) -> None:
    for name in ("logs-10", "logs-11"):
        engine.create_index(name, {"mappings": MONTHLY})
    engine.update_aliases([{"add": {"index": name, "alias": "logs"}} for name in ("logs-10", "logs-11")])
    config = tmp_path / "esbridge.toml"
    config.write_text('[fields.logs]\ntext = { body = 1.0 }\ntags = "tags"\ndate = "updated"\n', encoding="utf-8")
    settings = load_settings(config, index="logs")
    assert preflight(settings, engine, None) is settings  # before: "expected one index behind 'logs', found 2"
    config.write_text('[fields.logs]\ntext = { body = 1.0 }\ntags = "tag"\n', encoding="utf-8")
    with pytest.raises(errors.ConfigError, match="names fields that are not in the index's mapping: tags = 'tag'"):
        preflight(load_settings(config, index="logs"), engine, None)
