"""Ingestion against live engines: incremental sync, bad input, overload, no model, interruption."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect
from esbridge.engines.base import BulkAction, BulkResult
from esbridge.engines.bulk import RetryPolicy
from esbridge.engines.dialect import knn_body, match_body
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ConfigError, EngineUnavailable
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.run import IngestOptions, IngestReport, Progress, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters, render_index
from tests.support.loopback import ForwardingProxy, busy_for

LONG_SECTION = " ".join(f"Sentence {n} about tidal energy and turbines in estuaries." for n in range(120))


def write_vault(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "alpha.md").write_text(
        "---\ntitle: Alpha note\ntags: [energy]\nmodified: 2026-11-01\n---\n# Alpha note\n\n"
        "Alpha links to [[beta]] and [[gamma|the long one]]. #renewables\n\n## Details\n\nWind farms offshore.\n",
        encoding="utf-8",
    )
    (root / "beta.md").write_text("# Beta\n\nBeta is about sourdough bread and starters.\n", encoding="utf-8")
    (root / "gamma.md").write_text(f"# Gamma\n\n## Tides\n\n{LONG_SECTION}\n", encoding="utf-8")
    return root


def manager_for(engine: Engine, alias: str, dimension: int = 384) -> IndexManager:
    return IndexManager(engine, alias, IndexParameters(dimension=dimension))


def run(path: Path, engine: Engine, alias: str, embedder: CachedEmbedder | None, **options: object) -> IngestReport:
    return ingest(
        path,
        engine=engine,
        manager=manager_for(engine, alias),
        embedder=embedder,
        options=IngestOptions(**{"source": "test-source", **options}),  # type: ignore[arg-type]
    )


def index_state(engine: Engine, alias: str) -> dict[str, str]:
    hits = engine.scan(alias, {"match_all": {}}, ["content_hash"], sort_field="chunk_id")
    return {hit.id: str(hit.source["content_hash"]) for hit in hits}


def chunk_ids_of(engine: Engine, alias: str, doc_id: str) -> list[str]:
    return [hit.id for hit in engine.scan(alias, {"term": {"doc_id": doc_id}}, ["chunk_id"], sort_field="chunk_id")]


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
    assert third.embedded == len(chunk_ids_of(engine, alias, "beta"))

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


def test_bad_records_are_reported_and_every_good_one_indexed(
    engine_settings: Settings, engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    lines = [
        json.dumps({"id": "r1", "title": "Tidal power", "text": "Turbines in estuaries.", "tags": ["energy"]}).encode(),
        b'{"id": "r2", "title": "broken json",',
        json.dumps({"id": "r3", "title": "Wrong type", "text": "x", "tags": 5}).encode(),
        b'{"id": "r4", "title": "bad bytes \xff\xfe", "text": "y"}',
        json.dumps({"id": "r5", "title": "Solar", "text": "Panels on roofs.", "modified_at": "2026-11-20"}).encode(),
        json.dumps({"title": "no id", "text": "z"}).encode(),
        json.dumps({"id": "r7", "name": "weather-server", "description": "Forecasts", "tools": [
            {"name": "get_forecast", "description": "Forecast for a city"}]}).encode(),
    ]  # fmt: skip
    records.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(
        main,
        ["ingest", str(records), "--json", "--url", engine_settings.url or "", "--index", alias],
        env={"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder_cache(embedder))},
    )
    assert result.exit_code == 1, "a failed record makes the exit code non-zero"
    summary = json.loads(result.stdout)
    assert summary["documents_indexed"] == 3
    failed_lines = sorted(failure["id"] for failure in summary["failed"])
    assert failed_lines == ["records.jsonl:2", "records.jsonl:3", "records.jsonl:4", "records.jsonl:6"]
    reasons = " | ".join(failure["reason"] for failure in summary["failed"])
    assert "tags" in reasons
    assert "UTF-8" in reasons
    assert set(summary["timings"]) == {"parse_s", "embed_s", "index_s"}
    assert {"chunks_indexed", "unchanged", "deleted"} <= set(summary)
    tool = engine.search(alias, match_body("get_forecast", ["body", "title"], size=1)).hits
    assert tool[0].source["doc_id"] == "r7"


def test_a_record_whose_id_the_engine_refuses_fails_alone(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The engines refuse a whole bulk request when one _id is over 512 bytes; its neighbours must still land."""
    records = tmp_path / "records.jsonl"
    long_id = "x" * 600
    rows = [{"id": f"r{n}", "title": f"Record {n}", "text": f"Tidal turbine number {n}."} for n in range(5)]
    rows.insert(2, {"id": long_id, "title": "Long id", "text": "Its id is too long for any engine."})
    records.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    report = run(records, engine, alias, embedder)
    engine.refresh(alias)
    assert sorted(index_state(engine, alias)) == [f"r{n}#0" for n in range(5)]
    assert [failure["id"] for failure in report.failed] == [f"{long_id}#0"]
    assert "512" in report.failed[0]["reason"]


def test_a_shrunk_record_whose_new_chunk_is_refused_keeps_its_old_chunks(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "tide", "title": "Tides", "text": LONG_SECTION}) + "\n", encoding="utf-8")
    first = run(records, engine, alias, embedder)
    old = index_state(engine, alias)
    assert first.failed == [] and len(old) >= 3
    # The new version is one chunk, which the engine refuses (a keyword term over 32,766 bytes).
    shrunk = {"id": "tide", "title": "Tides", "text": "Short now.", "tags": ["t" * 40_000]}
    records.write_text(json.dumps(shrunk) + "\n", encoding="utf-8")
    second = run(records, engine, alias, embedder)
    assert [failure["id"] for failure in second.failed] == ["tide#0"]
    assert second.deleted == 0
    assert index_state(engine, alias) == old, "the old version stays whole until the new one can be written"


def embedder_cache(embedder: CachedEmbedder) -> Path:
    return embedder.cache.path.parent


def test_broken_frontmatter_is_reported_and_the_note_indexed(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n\nStill searchable text.\n", "utf-8")
    (vault / "fine.md").write_text("# Fine\n\nNothing wrong here.\n", "utf-8")
    report = run(vault, engine, alias, embedder)
    assert report.failed == []
    assert report.documents_indexed == 2
    assert any("broken.md" in warning for warning in report.warnings)
    assert engine.search(alias, match_body("searchable", ["body"], size=1)).hits[0].source["doc_id"] == "broken"


def test_an_engine_answering_429_for_a_while_loses_nothing(
    engine_settings: Settings, engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault")
    with ForwardingProxy(engine_settings.url or "", busy_for(4)).running() as proxy:
        settings = load_settings(url=proxy.url, engine=engine_settings.engine, retries=0)
        through_proxy = connect(settings)
        report = ingest(
            vault,
            engine=through_proxy,
            manager=manager_for(through_proxy, alias),
            embedder=embedder,
            options=IngestOptions(source="t", retry=RetryPolicy(attempts=8, initial_delay_s=0.05)),
        )
        through_proxy.close()
    assert proxy.intercepted == 4
    assert report.failed == []
    assert report.chunks_indexed == len(index_state(engine, alias))
    assert report.documents_indexed == 3


class GoesAwayAfter:
    """The engine behind ``proxy``, which stops listening once ``bulks`` bulk requests were answered."""

    def __init__(self, engine: Engine, proxy: ForwardingProxy, bulks: int) -> None:
        self._engine, self._proxy, self._left = engine, proxy, bulks

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        result = self._engine.bulk(index, actions)
        self._left -= 1
        if self._left == 0:
            self._proxy.stop()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def test_an_engine_gone_mid_run_stops_it_with_the_count_and_a_rerun_writes_the_rest(
    engine_settings: Settings, engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    rows = [{"id": f"r{n:02d}", "title": f"Record {n}", "text": f"Tidal turbine number {n}."} for n in range(12)]
    records.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with ForwardingProxy(engine_settings.url or "", lambda *_: None).running() as proxy:
        through_proxy = connect(load_settings(url=proxy.url, engine=engine_settings.engine, retries=0))
        going: Engine = GoesAwayAfter(through_proxy, proxy, bulks=2)
        with pytest.raises(EngineUnavailable, match=r"stopped answering .* after 4 of 12 chunk writes"):
            ingest(
                records,
                engine=going,
                manager=manager_for(engine, alias),
                embedder=embedder,
                options=IngestOptions(source="t", window=2, retry=RetryPolicy(attempts=2, initial_delay_s=0.01)),
            )
        through_proxy.close()
    engine.refresh(alias)
    assert sorted(index_state(engine, alias)) == ["r00#0", "r01#0", "r02#0", "r03#0"]

    again = ingest(records, engine=engine, manager=manager_for(engine, alias), embedder=embedder,
                   options=IngestOptions(source="t"))  # fmt: skip
    assert (again.failed, again.unchanged, again.chunks_indexed) == ([], 4, 8)
    assert sorted(index_state(engine, alias)) == [f"r{n:02d}#0" for n in range(12)]


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
