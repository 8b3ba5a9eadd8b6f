"""Ingestion against live engines: incremental sync, refusals before writing, no model, interruption."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.dialect import knn_body, match_body
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ConfigError
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.progress import Progress
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.schema import IndexParameters, render_index
from tests.support.ingest_runs import (
    chunk_ids_of,
    index_state,
    manager_for,
    run,
    write_vault,
)


def test_a_vault_syncs_incrementally(engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    first = run(vault, engine, alias, embedder)
    assert first.failed == []
    assert first.documents_indexed == 3
    gamma_chunks = chunk_ids_of(engine, alias, "gamma")
    assert len(gamma_chunks) > 1, "a section longer than the model window is split"
    assert first.chunks_indexed == len(index_state(engine, alias))

    alpha = engine.search(alias, {"query": {"term": {"doc_id": "alpha"}}}).hits[0].source
    assert sorted(alpha["links"]) == ["beta", "gamma"]
    assert sorted(alpha["tags"]) == ["energy", "renewables"]
    lexical = engine.search(alias, match_body("sourdough", ["title", "body"], size=3))
    assert lexical.hits[0].source["doc_id"] == "beta"
    vector = embedder.embed(["baking bread at home"])[0]
    semantic = engine.search(alias, knn_body(engine.dialect, "vector", vector, k=3, num_candidates=20))
    assert semantic.hits[0].source["doc_id"] == "beta"

    second = run(vault, engine, alias, embedder)
    assert (second.chunks_indexed, second.embedded, second.deleted) == (0, 0, 0)
    assert second.unchanged == first.chunks_indexed

    (vault / "beta.md").write_text("# Beta\n\nBeta is now about rye bread.\n", encoding="utf-8")
    third = run(vault, engine, alias, embedder)
    assert third.documents_indexed == 1
    assert third.embedded + third.from_cache == len(chunk_ids_of(engine, alias, "beta"))  # the cache outlives runs

    (vault / "gamma.md").write_text("# Gamma\n\n## Tides\n\nShort now.\n", encoding="utf-8")
    shrunk = run(vault, engine, alias, embedder)
    assert chunk_ids_of(engine, alias, "gamma") == ["gamma#0"]
    assert shrunk.deleted == len(gamma_chunks) - 1

    (vault / "beta.md").unlink()
    (vault / "alpha.md").rename(vault / "alpha-renamed.md")
    moved = run(vault, engine, alias, embedder)
    assert chunk_ids_of(engine, alias, "beta") == []
    assert chunk_ids_of(engine, alias, "alpha") == []
    assert chunk_ids_of(engine, alias, "alpha-renamed") != []
    assert moved.failed == []

    fresh_alias = f"{alias}-fresh"
    try:
        run(vault, engine, fresh_alias, embedder)
        assert index_state(engine, alias) == index_state(engine, fresh_alias)
    finally:
        for info in engine.list_indices(f"{fresh_alias}*"):
            engine.delete_index(info.name)


def test_a_run_that_would_delete_most_of_a_source_is_refused_before_writing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    first, second = tmp_path / "one" / "vault", tmp_path / "two" / "vault"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    for n in range(30):
        (first / f"note-{n}.md").write_text(f"# Note {n}\n\nAbout turbine number {n}.\n", encoding="utf-8")
    (second / "note-0.md").write_text("# Note 0\n\nA different note of the same name.\n", encoding="utf-8")
    (second / "elsewhere.md").write_text("# Elsewhere\n\nSomething else.\n", encoding="utf-8")

    def load(path: Path, **options: object) -> IngestReport:
        return ingest(
            path,
            engine=engine,
            manager=manager_for(engine, alias),
            embedder=None,
            options=IngestOptions(**options),  # type: ignore[arg-type]
        )

    assert load(first).chunks_indexed == 30
    held = index_state(engine, alias)
    # the default label of both folders is "vault": the second would replace the first
    with pytest.raises(ConfigError, match=r"holds 30 chunks for source 'vault'.* would delete 29 of them.*--source"):
        load(second)
    assert index_state(engine, alias) == held, "nothing is written when the run is refused"

    (first / "note-29.md").unlink()
    assert load(first).deleted == 1, "removing a few documents needs no permission"

    for n in range(1, 29):
        (first / f"note-{n}.md").unlink()
    with pytest.raises(ConfigError, match="--allow-mass-delete"):
        load(first)
    assert load(first, max_delete_share=1.0).deleted == 28
    assert sorted(index_state(engine, alias)) == ["note-0#0"]


def test_a_small_file_of_the_same_name_does_not_replace_the_first(engine: Engine, alias: str, tmp_path: Path) -> None:
    # Both label as "a.jsonl": the second run would delete every document of the first, too few to reach the
    # 20-chunk minimum of the share rule.
    first, second = tmp_path / "f1" / "a.jsonl", tmp_path / "f2" / "a.jsonl"
    for path, ids in ((first, ("x", "y")), (second, ("z",))):
        path.parent.mkdir()
        path.write_text("".join(f'{{"id": "{id_}", "text": "Record {id_}."}}\n' for id_ in ids), encoding="utf-8")

    def load(path: Path, **options: object) -> IngestReport:
        manager = manager_for(engine, alias)
        return ingest(path, engine=engine, manager=manager, embedder=None, options=IngestOptions(**options))  # type: ignore[arg-type]

    load(first)
    held = index_state(engine, alias)
    with pytest.raises(ConfigError, match=r"holds 2 chunks for source 'a.jsonl'.* would delete 2 of them \(100%\)"):
        load(second)
    assert index_state(engine, alias) == held, "nothing is written when the run is refused"
    assert load(second, source="f2/a.jsonl").chunks_indexed == 1
    assert sorted(index_state(engine, alias)) == ["x#0", "y#0", "z#0"]
    first.write_text('{"id": "x", "text": "Record x."}\n', encoding="utf-8")
    assert load(first).deleted == 1, "removing some of a small source's documents needs no permission"


def assert_a_second_source_cannot_overwrite_the_first(engine: Engine, alias: str, tmp_path: Path) -> None:
    notes, docs = tmp_path / "a" / "notes", tmp_path / "c" / "docs"
    for folder, text in ((notes, "Alpha from the notes."), (docs, "Alpha from the docs.")):
        folder.mkdir(parents=True)
        (folder / "alpha.md").write_text(f"# Alpha\n\n{text}\n", encoding="utf-8")
    (docs / "only-in-docs.md").write_text("# Only here\n\nNothing shared.\n", encoding="utf-8")

    def load(path: Path, **options: object) -> IngestReport:
        manager = manager_for(engine, alias)
        return ingest(path, engine=engine, manager=manager, embedder=None, options=IngestOptions(**options))  # type: ignore[arg-type]

    assert load(notes).chunks_indexed == 1
    held = index_state(engine, alias)
    with pytest.raises(ConfigError, match=r"1 chunk.*'alpha'.*'notes'.*'docs'.*--index.*--source notes") as refused:
        load(docs)
    assert "nothing was written" in str(refused.value)
    assert index_state(engine, alias) == held, "the first source's alpha is intact and nothing else was written"

    relabelled = load(docs, source="notes")
    assert relabelled.failed == []
    assert sorted(index_state(engine, alias)) == ["alpha#0", "only-in-docs#0"]


def test_a_source_sharing_document_ids_with_another_is_refused_before_writing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    assert_a_second_source_cannot_overwrite_the_first(engine, alias, tmp_path)


def test_the_embedded_engine_refuses_a_source_sharing_document_ids_too(tmp_path: Path) -> None:
    embedded = EmbeddedEngine(tmp_path / "data")
    try:
        assert_a_second_source_cannot_overwrite_the_first(embedded, "notes", tmp_path)
    finally:
        embedded.close()


def test_an_index_without_a_field_ingest_writes_is_refused_with_the_fix(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    body = render_index(engine.dialect, IndexParameters(dimension=384))
    del body["mappings"]["properties"]["metadata_text"]
    engine.create_index(f"{alias}-v1", body)
    engine.update_aliases([{"add": {"index": f"{alias}-v1", "alias": alias}}])
    vault = write_vault(tmp_path / "vault")
    with pytest.raises(ConfigError, match=r"no mapping for metadata_text.*esbridge mapping apply"):
        run(vault, engine, alias, None)
    assert engine.count(alias) == 0
    manager_for(engine, alias).apply()
    assert run(vault, engine, alias, None).failed == []


def test_weighted_links_need_link_weights_in_the_mapping_and_unweighted_ones_do_not(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    body = render_index(engine.dialect, IndexParameters(dimension=384))
    del body["mappings"]["properties"]["link_weights"]
    engine.create_index(f"{alias}-v1", body)
    engine.update_aliases([{"add": {"index": f"{alias}-v1", "alias": alias}}])
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "a", "text": "Alpha", "links": ["b"]}\n{"id": "b", "text": "Beta"}\n', encoding="utf-8")
    assert run(plain, engine, alias, None).failed == []
    weighted = tmp_path / "weighted.jsonl"
    weighted.write_text(
        '{"id": "c", "text": "Gamma", "links": [{"id": "d", "weight": 4}]}\n{"id": "d", "text": "Delta"}\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"no mapping for link_weights.*esbridge mapping apply"):
        run(weighted, engine, alias, None, source="weighted")
    assert sorted(index_state(engine, alias)) == ["a#0", "b#0"]
    manager_for(engine, alias).apply()
    assert run(weighted, engine, alias, None, source="weighted").failed == []
    stored = {
        hit.id: dict(hit.source)
        for hit in engine.scan(alias, {"match_all": {}}, ["links", "link_weights"], sort_field="chunk_id")
    }
    assert stored["c#0"] == {"links": ["d"], "link_weights": {"d": 4.0}}
    assert "link_weights" not in stored["a#0"]


def test_without_a_model_chunks_are_lexical_until_embedded(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault")
    report = run(vault, engine, alias, None)
    assert report.failed == []
    assert report.embedded == 0
    assert any("embed --missing" in warning for warning in report.warnings)
    missing = engine.search(alias, {"size": 0, "query": {"term": {"embedding": "missing"}}})
    assert missing.total == report.chunks_indexed
    assert engine.search(alias, match_body("sourdough", ["body"], size=1)).hits[0].source["doc_id"] == "beta"

    filled = embed_missing(engine, manager_for(engine, alias).current(), embedder)
    assert filled.failed == []
    assert filled.chunks_indexed == report.chunks_indexed
    assert engine.search(alias, {"size": 0, "query": {"term": {"embedding": "missing"}}}).total == 0
    vector = embedder.embed(["baking bread"])[0]
    assert engine.search(alias, knn_body(engine.dialect, "vector", vector, k=1)).hits[0].source["doc_id"] == "beta"

    again = run(vault, engine, alias, embedder)
    assert again.embedded == 0, "chunks that got their vector are unchanged"


def test_a_model_of_another_dimension_is_refused_before_writing(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    manager_for(engine, alias, dimension=8).create()
    with pytest.raises(ConfigError, match=r"384-dimensional vectors but index .* maps 8"):
        ingest(write_vault(tmp_path / "v"), engine=engine, manager=manager_for(engine, alias), embedder=embedder)
    assert engine.count(alias) == 0


def test_an_interrupted_run_converges_when_run_again(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault")

    class Interrupted(Exception):
        pass

    class StopAfterFirstWindow:
        def update(self, n: int) -> None:
            raise Interrupted

    @contextmanager
    def interrupting(description: str, total: int) -> Iterator[Progress]:
        yield StopAfterFirstWindow()

    with pytest.raises(Interrupted):
        ingest(
            vault,
            engine=engine,
            manager=manager_for(engine, alias),
            embedder=embedder,
            options=IngestOptions(source="test-source", window=2),
            progress=interrupting,
        )
    engine.refresh(alias)
    partial = index_state(engine, alias)
    assert 0 < len(partial) < 5

    resumed = run(vault, engine, alias, embedder)
    assert resumed.failed == []
    assert resumed.unchanged == len(partial)

    fresh_alias = f"{alias}-fresh"
    try:
        run(vault, engine, fresh_alias, embedder)
        assert index_state(engine, alias) == index_state(engine, fresh_alias)
    finally:
        for info in engine.list_indices(f"{fresh_alias}*"):
            engine.delete_index(info.name)
