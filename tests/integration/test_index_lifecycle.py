"""Versioned indices behind an alias, mapping diff/apply and the code analyzer, on live engines."""

from __future__ import annotations

import copy

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings
from esbridge.engines import BulkAction, Engine
from esbridge.errors import IndexAlreadyExists, IndexNotFound
from esbridge.mappings.lifecycle import IndexManager, MappingNeedsNewVersion
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters
from tests.integration.engines import require_feature

DIMENSION = 4


def manager(engine: Engine, alias: str, **params: float) -> IndexManager:
    return IndexManager(engine, alias, IndexParameters(dimension=DIMENSION, **params))  # type: ignore[arg-type]


def chunk(chunk_id: str, **fields: object) -> BulkAction:
    document = {"chunk_id": chunk_id, "doc_id": chunk_id.split("#")[0], "vector": [0.1, 0.2, 0.3, 0.4], **fields}
    return BulkAction("index", chunk_id, document)


def test_create_points_the_alias_at_version_one(engine: Engine, alias: str) -> None:
    indices = manager(engine, alias)
    assert indices.create() == f"{alias}-v1"
    state = indices.state()
    assert state.current == f"{alias}-v1"
    assert [info.name for info in state.versions] == [f"{alias}-v1"]
    with pytest.raises(IndexAlreadyExists, match="index reindex"):
        indices.create()
    assert indices.ensure() == f"{alias}-v1"


def test_the_live_mapping_matches_its_own_rendering(engine: Engine, alias: str) -> None:
    indices = manager(engine, alias)
    indices.create()
    diff = indices.diff()
    assert diff.changes == (), [change.describe() for change in diff.changes]


def test_another_dimension_is_refused_with_a_reason(engine: Engine, alias: str) -> None:
    manager(engine, alias).create()
    bigger = IndexManager(engine, alias, IndexParameters(dimension=DIMENSION * 2))
    with pytest.raises(MappingNeedsNewVersion, match=r"vector\.(dimension|dims).*needs a new index version"):
        bigger.apply()


def test_apply_adds_a_missing_field_in_place(engine: Engine, alias: str) -> None:
    older = copy.deepcopy(manager(engine, alias).wanted_body())
    del older["mappings"]["properties"]["category"]
    engine.create_index(f"{alias}-v1", older)
    engine.update_aliases([{"add": {"index": f"{alias}-v1", "alias": alias, "is_write_index": True}}])

    indices = manager(engine, alias)
    assert "category" in indices.diff().additions
    indices.apply()
    assert indices.diff().changes == ()
    assert engine.get_mapping(alias)["properties"]["category"]["type"] == "keyword"


def test_reindex_copies_everything_then_swaps_the_alias(engine: Engine, alias: str) -> None:
    indices = manager(engine, alias)
    indices.create()
    result = engine.bulk(alias, [chunk(f"doc{n}#0", title=f"note {n}") for n in range(25)])
    assert not result.failed
    engine.refresh(alias)

    outcome = manager(engine, alias, bm25_k1=1.2).reindex()
    assert (outcome.old, outcome.new, outcome.documents) == (f"{alias}-v1", f"{alias}-v2", 25)
    # a build without server-side _reindex (Elasticsearch's integ-test build) is copied through the client
    assert outcome.server_side is engine.probe().features.get("reindex", True)
    assert engine.get_mapping(alias)["properties"]["vector"]
    knn = bodies.knn_body(engine.dialect, [0.1, 0.2, 0.3, 0.4], k=25, filters=Filters(), num_candidates=50)
    assert len(engine.search(alias, knn).hits) == 25, "the copied chunks keep their vectors"
    assert indices.state().current == f"{alias}-v2"
    assert engine.count(alias) == 25
    assert engine.get_index_settings(alias)["similarity"]["default"]["k1"] in ("1.2", 1.2)
    assert engine.index_exists(f"{alias}-v1"), "the old version is kept unless --delete-old"

    assert indices.drop(version=1) == [f"{alias}-v1"]
    assert sorted(indices.drop()) == [f"{alias}-v2"]
    assert indices.state().current is None
    with pytest.raises(IndexNotFound, match="esbridge index create"):
        indices.current()


def test_code_identifiers_are_found_by_their_parts_and_whole(engine: Engine, alias: str, engine_kind: str) -> None:
    require_feature(engine_kind, "text_analysis", "analysis-common: the identifier-splitting code analyzer")
    manager(engine, alias).create()
    code = "user = getUserName(request)\npath = os.path.join(base, user_name)"
    engine.bulk(alias, [chunk("code#0", code=code), chunk("other#0", code="print('hello world')")])
    engine.refresh(alias)
    for query in ("getUserName", "user", "name", "os.path.join", "join", "user_name", "getusername"):
        hits = engine.search(alias, {"query": {"match": {"code": query}}}).hits
        assert [hit.id for hit in hits] == ["code#0"], query


def test_scan_pages_through_every_chunk(engine: Engine, alias: str) -> None:
    manager(engine, alias).create()
    engine.bulk(alias, [chunk(f"d{n:03d}#0", source="vault") for n in range(23)])
    engine.refresh(alias)
    seen = list(engine.scan(alias, {"term": {"source": "vault"}}, ["chunk_id"], sort_field="chunk_id", page_size=5))
    assert [hit.id for hit in seen] == [f"d{n:03d}#0" for n in range(23)]


def test_index_commands_end_to_end(engine_settings: Settings, engine: Engine, alias: str) -> None:
    base = ["--url", engine_settings.url or "", "--index", alias]
    env = {"ESBRIDGE_EMBEDDING__DIMENSION": str(DIMENSION)}
    runner = CliRunner()
    created = runner.invoke(main, ["index", "create", *base], env=env)
    assert created.exit_code == 0, created.output
    assert f"created {alias}-v1" in created.output

    listed = runner.invoke(main, ["index", "list", *base], env=env)
    assert f"* {alias}-v1" in listed.output
    assert "chunks" in listed.output.splitlines()[0], "the engine counts chunks, not source documents"

    diff = runner.invoke(main, ["mapping", "diff", "--exit-code", *base], env=env)
    assert diff.exit_code == 0, diff.output
    assert "no differences" in diff.output

    wider = runner.invoke(main, ["mapping", "apply", "--yes", *base], env={"ESBRIDGE_EMBEDDING__DIMENSION": "8"})
    assert wider.exit_code == 1
    assert "needs a new index version" in wider.output
    assert "esbridge index reindex" in wider.output

    refused = runner.invoke(main, ["index", "drop", *base], env=env, input="n\n")
    assert refused.exit_code == 1
    assert "cancelled" in refused.output
    assert engine.index_exists(f"{alias}-v1")

    moved = runner.invoke(main, ["index", "reindex", *base], env={"ESBRIDGE_EMBEDDING__DIMENSION": "8"})
    assert moved.exit_code == 0, moved.output
    assert f"copied 0 chunks from {alias}-v1 to {alias}-v2" in moved.output
    assert engine.get_mapping(alias)["properties"]["vector"].get("dimension", 8) == 8 or engine.dialect != "opensearch"

    dropped = runner.invoke(main, ["index", "drop", "--yes", *base], env=env)
    assert dropped.exit_code == 0, dropped.output
    assert not engine.list_indices(f"{alias}-v*")
