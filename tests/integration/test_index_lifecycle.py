"""Versioned indices behind an alias, mapping diff/apply and the code analyzer, on live engines."""

from __future__ import annotations

import copy
import json
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main
from esbridge.config import Settings
from esbridge.engines import BulkAction, Engine, Hit
from esbridge.engines.blocks import write_blocked
from esbridge.engines.bulk import BulkWriter
from esbridge.errors import EngineResponseError, IndexAlreadyExists, IndexNotFound, ReindexInterrupted
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


class DuringTheCopy:
    """The live engine, except that ``meanwhile`` runs as a reindex starts copying: just before the
    server-side ``_reindex``, or the first page of a copy through the client."""

    def __init__(self, engine: Engine, meanwhile: Callable[[], None]) -> None:
        self._engine = engine
        self._meanwhile: Callable[[], None] | None = meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def _copy_starts(self) -> None:
        meanwhile, self._meanwhile = self._meanwhile, None
        if meanwhile is not None:
            meanwhile()

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        self._copy_starts()
        return self._engine.reindex(source, dest, timeout_s=timeout_s)

    def scan(
        self, index: str, query: Mapping[str, Any], fields: Sequence[str], *, sort_field: str, page_size: int = 1000
    ) -> Iterator[Hit]:
        self._copy_starts()
        return self._engine.scan(index, query, fields, sort_field=sort_field, page_size=page_size)


def reindex_with(engine: Engine, alias: str, meanwhile: Callable[[], None]) -> str:
    """Reindex ``alias`` with ``meanwhile`` run by another writer as the copy starts; the new version."""
    during = cast(Engine, DuringTheCopy(engine, meanwhile))
    return IndexManager(during, alias, IndexParameters(dimension=DIMENSION)).reindex().new


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

    outcome = manager(engine, alias, bm25_k1=1.5).reindex()
    assert (outcome.old, outcome.new, outcome.documents) == (f"{alias}-v1", f"{alias}-v2", 25)
    # a build without server-side _reindex (Elasticsearch's integ-test build) is copied through the client
    assert outcome.server_side is engine.probe().features.get("reindex", True)
    assert engine.get_mapping(alias)["properties"]["vector"]
    knn = bodies.knn_body(engine.dialect, [0.1, 0.2, 0.3, 0.4], k=25, filters=Filters(), num_candidates=50)
    assert len(engine.search(alias, knn).hits) == 25, "the copied chunks keep their vectors"
    assert indices.state().current == f"{alias}-v2"
    assert engine.count(alias) == 25
    assert engine.get_index_settings(alias)["similarity"]["default"]["k1"] in ("1.5", 1.5)
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


def test_an_ingest_during_a_reindex_is_refused_by_name_and_lands_when_run_again(
    engine_settings: Settings, engine: Engine, alias: str, tmp_path: Path
) -> None:
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"old{n}#0", title=f"old {n}") for n in range(3)]).failed
    engine.refresh(alias)
    notes = tmp_path / "notes.jsonl"
    records = [{"id": f"new{n}", "title": f"New note {n}", "text": f"Written during a reindex, {n}."} for n in (1, 2)]
    notes.write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    command = ["ingest", str(notes), "--json", "--url", engine_settings.url or "", "--index", alias]
    # No model: chunks are written for lexical search only, which is all this needs.
    env = {"ESBRIDGE_EMBEDDING__MODEL": str(tmp_path / "no-model"), "ESBRIDGE_EMBEDDING__DIMENSION": str(DIMENSION)}
    runs: list[Result] = []

    new = reindex_with(engine, alias, lambda: runs.append(CliRunner().invoke(main, command, env=env)))

    (during,) = runs
    assert during.exit_code == 1, during.output
    report = json.loads(during.stdout)
    assert report["chunks_indexed"] == 0
    assert sorted(failure["id"] for failure in report["failed"]) == ["new1#0", "new2#0"]
    for failure in report["failed"]:
        assert "is write-blocked" in failure["reason"]
        assert "`esbridge index reindex`" in failure["reason"]
        assert "nothing was written" in failure["reason"]
    assert any("run this command again once the reindex has finished" in w for w in report["warnings"])
    assert new == f"{alias}-v2"
    assert engine.alias_targets(alias) == [new]
    assert engine.count(f"{alias}-v1") == 3, "the refused chunks did not land in the old version either"
    assert not write_blocked(engine.get_index_settings(f"{alias}-v1")), "the reindex lifted its block"

    again = CliRunner().invoke(main, command, env=env)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["chunks_indexed"] == 2
    engine.refresh(alias)
    assert engine.count(alias) == 5


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, as the copy starts."""


@pytest.mark.parametrize("failure", ["copy fails", "interrupted"])
def test_after_a_failed_reindex_the_old_version_takes_writes_again(engine: Engine, alias: str, failure: str) -> None:
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"old{n}#0") for n in range(3)]).failed
    engine.refresh(alias)
    writer = BulkWriter(engine, alias, sleep=lambda seconds: pytest.fail(f"a refused write was retried ({seconds})"))

    def write_then_fail() -> None:
        writer.write([chunk("during#0")])
        if failure == "interrupted":
            raise Interrupted
        engine.set_write_block(f"{alias}-v2", True)  # the new version refuses every chunk: the copy itself fails

    expected = EngineResponseError if failure == "copy fails" else ReindexInterrupted
    with pytest.raises(expected):
        reindex_with(engine, alias, write_then_fail)

    (refused,) = writer.totals.failed
    assert (refused.id, refused.status) == ("during#0", 403)
    assert "is write-blocked" in refused.reason and "nothing was written" in refused.reason
    assert engine.alias_targets(alias) == [f"{alias}-v1"]
    assert not engine.index_exists(f"{alias}-v2"), "the half-built version is deleted"
    assert not write_blocked(engine.get_index_settings(f"{alias}-v1"))
    written = engine.bulk(alias, [chunk("after#0")])
    assert (list(written.succeeded), list(written.failed)) == (["after#0"], [])
    engine.refresh(alias)
    assert engine.count(alias) == 4


def test_a_field_only_in_the_live_index_is_left_behind_by_a_reindex(engine: Engine, alias: str) -> None:
    # A field added to the live mapping by hand: `mapping diff` says a reindex drops it, and so it must.
    manager(engine, alias).create()
    engine.put_mapping(f"{alias}-v1", {"added_by_hand": {"type": "keyword"}})
    written = engine.bulk(alias, [chunk("a#0", title="kept", added_by_hand="x"), chunk("b#0", title="plain")])
    assert not written.failed
    engine.refresh(alias)
    (extra,) = [change for change in manager(engine, alias).diff().changes if change.kind == "extra"]
    assert "a reindex drops it" in extra.describe()

    outcome = manager(engine, alias).reindex()

    assert (outcome.new, outcome.documents) == (f"{alias}-v2", 2)
    assert "added_by_hand" not in engine.get_mapping(alias)["properties"]
    hits = engine.scan(alias, {"match_all": {}}, ["title", "vector"], sort_field="chunk_id")
    copied = {hit.id: hit.source for hit in hits}
    assert copied["a#0"]["title"] == "kept"
    assert [round(value, 3) for value in copied["a#0"]["vector"]] == [0.1, 0.2, 0.3, 0.4]
    assert not write_blocked(engine.get_index_settings(f"{alias}-v1"))


def test_a_reindex_overtaken_by_another_says_so_and_leaves_the_alias_where_that_one_put_it(
    engine: Engine, alias: str
) -> None:
    manager(engine, alias).create()
    assert not engine.bulk(alias, [chunk(f"old{n}#0") for n in range(3)]).failed
    engine.refresh(alias)
    overtaking: list[str] = []

    with pytest.raises(EngineResponseError, match=rf"{alias} was moved to {alias}-v3 .*another `esbridge index"):
        reindex_with(engine, alias, lambda: overtaking.append(manager(engine, alias).reindex().new))

    assert overtaking == [f"{alias}-v3"]
    assert engine.alias_targets(alias) == [f"{alias}-v3"]
    assert not engine.index_exists(f"{alias}-v2"), "the overtaken copy is deleted"
    assert engine.count(alias) == 3
    assert not write_blocked(engine.get_index_settings(f"{alias}-v1"))


def test_a_closed_version_is_listed_numbered_past_and_dropped(
    engine: Engine, engine_settings: Settings, alias: str
) -> None:
    indices = manager(engine, alias)
    indices.create()
    indices.reindex()
    # Back on v1 with v2 closed (an operator rolling back and freeing v2's memory): the next version is v3.
    engine.update_aliases(
        [{"remove": {"index": f"{alias}-v2", "alias": alias}}, {"add": {"index": f"{alias}-v1", "alias": alias}}]
    )
    request = urllib.request.Request(f"{engine_settings.url}/{alias}-v2/_close", method="POST")
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert json.load(answer)["acknowledged"]

    listed = CliRunner().invoke(
        main, ["index", "list", "--json", "--url", engine_settings.url or "", "--index", alias], env={}
    )
    assert listed.exit_code == 0, listed.output
    versions = {version["name"]: version for version in json.loads(listed.stdout)["versions"]}
    assert sorted(versions) == [f"{alias}-v1", f"{alias}-v2"]
    assert (versions[f"{alias}-v1"]["closed"], versions[f"{alias}-v2"]["closed"]) == (False, True)

    assert indices.reindex().new == f"{alias}-v3"
    assert sorted(indices.drop()) == [f"{alias}-v1", f"{alias}-v2", f"{alias}-v3"]
    assert not engine.index_exists(f"{alias}-v2"), "the closed version is deleted with the others"
    assert indices.create() == f"{alias}-v1"


def test_a_reindex_says_when_the_new_version_has_other_shards_or_replicas(
    engine_settings: Settings, engine: Engine, alias: str
) -> None:
    base = ["--url", engine_settings.url or "", "--index", alias]
    env = {"ESBRIDGE_EMBEDDING__DIMENSION": str(DIMENSION)}
    created = CliRunner().invoke(main, ["index", "create", *base], env={**env, "ESBRIDGE_MAPPING__SHARDS": "2"})
    assert created.exit_code == 0, created.output
    request = urllib.request.Request(
        f"{engine_settings.url}/{alias}/_settings",
        data=json.dumps({"index": {"number_of_replicas": 1}}).encode(),  # in place, as docs/clusters.md shows
        method="PUT",
        headers={"content-type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=60).close()

    moved = CliRunner().invoke(main, ["index", "reindex", *base], env=env)

    assert moved.exit_code == 0, moved.output
    assert f"{alias}-v2 has 1 shard(s) and 0 replica(s) where {alias}-v1 had 2 and 1" in moved.stderr
    unchanged = CliRunner().invoke(main, ["index", "reindex", *base], env=env)
    assert unchanged.exit_code == 0 and "replica" not in unchanged.stderr, unchanged.output
