from __future__ import annotations

import copy
from typing import Any

from esbridge.mappings.diff import diff_index
from esbridge.mappings.interrupted import version_of
from esbridge.mappings.lifecycle import version_name
from esbridge.mappings.schema import IndexParameters, render_index


def wanted(dimension: int = 384) -> dict[str, Any]:
    return render_index("opensearch", IndexParameters(dimension=dimension))


def as_engine_echoes(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mappings and settings the way engines return them: settings values as strings, defaults added."""
    mappings = copy.deepcopy(body["mappings"])
    mappings["properties"]["vector"]["method"]["parameters"]["ef_construction"] = 100
    settings = copy.deepcopy(body["settings"]["index"])
    settings["number_of_shards"] = "1"
    settings["knn"] = "true"
    settings["similarity"]["default"] = {"type": "BM25", "k1": "1.2", "b": "0.4"}
    settings["uuid"] = "x"
    settings["analysis"]["filter"]["esbridge_identifier_parts"]["preserve_original"] = "true"
    return mappings, settings


def test_identical_index_has_no_changes_despite_engine_normalisation() -> None:
    live_mappings, live_settings = as_engine_echoes(wanted())
    result = diff_index(live_mappings, live_settings, wanted()["mappings"], wanted()["settings"])
    assert result.changes == ()
    assert result.is_empty


def test_a_new_field_and_subfield_can_be_added_in_place() -> None:
    live_mappings, live_settings = as_engine_echoes(wanted())
    del live_mappings["properties"]["category"]
    del live_mappings["properties"]["title"]["fields"]["raw"]
    result = diff_index(live_mappings, live_settings, wanted()["mappings"], wanted()["settings"])
    assert result.needs_new_version == []
    assert result.additions["category"] == {"type": "keyword"}
    assert result.additions["title"]["fields"]["raw"] == {"type": "keyword", "ignore_above": 512}
    assert result.additions["title"]["type"] == "text"  # the whole field definition is re-sent
    assert [change.describe()[:2] for change in result.changes] == ["+ ", "+ "]


def test_another_vector_dimension_needs_a_new_version() -> None:
    live_mappings, live_settings = as_engine_echoes(wanted(384))
    result = diff_index(live_mappings, live_settings, wanted(768)["mappings"], wanted(768)["settings"])
    (change,) = result.needs_new_version
    assert change.path == "mappings.properties.vector.dimension"
    assert change.describe() == "~ mappings.properties.vector.dimension: 384 -> 768 (needs a new index version)"


def test_changed_bm25_parameters_need_a_new_version() -> None:
    live_mappings, live_settings = as_engine_echoes(wanted())
    body = render_index("opensearch", IndexParameters(bm25_k1=1.5))
    result = diff_index(live_mappings, live_settings, body["mappings"], body["settings"])
    assert [change.path for change in result.needs_new_version] == ["settings.index.similarity.default.k1"]


def test_fields_only_in_the_live_index_are_reported_but_harmless() -> None:
    live_mappings, live_settings = as_engine_echoes(wanted())
    live_mappings["properties"]["legacy"] = {"type": "keyword"}
    result = diff_index(live_mappings, live_settings, wanted()["mappings"], wanted()["settings"])
    assert [change.kind for change in result.changes] == ["extra"]
    assert result.is_empty
    assert result.needs_new_version == []


def test_version_names() -> None:
    assert version_name("notes", 3) == "notes-v3"
    assert version_of("notes", "notes-v12") == 12
    assert version_of("notes", "notes-v1-old") is None
    assert version_of("notes", "other-v1") is None
    assert version_of("no.tes", "noxtes-v1") is None
