"""Ingestion against live engines when records, the engine or the model fail: bad records, refused writes,
overload, an engine gone mid-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine, connect
from esbridge.engines.bulk import RetryPolicy
from esbridge.engines.dialect import match_body
from esbridge.errors import EngineUnavailable
from esbridge.ingest.run import IngestOptions, ingest
from tests.support.ingest_runs import (
    LONG_SECTION,
    embedder_cache,
    index_state,
    manager_for,
    run,
    write_vault,
)
from tests.support.loopback import ForwardingProxy, GoesAwayAfter, busy_for


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
    assert [failure["id"] for failure in report.failed] == [long_id]
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


def test_an_engine_gone_mid_run_stops_it_with_the_count_and_a_rerun_writes_the_rest(
    engine_settings: Settings, engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    rows = [{"id": f"r{n:02d}", "title": f"Record {n}", "text": f"Tidal turbine number {n}."} for n in range(12)]
    records.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with ForwardingProxy(engine_settings.url or "", lambda *_: None).running() as proxy:
        through_proxy = connect(load_settings(url=proxy.url, engine=engine_settings.engine, retries=0))
        going: Engine = GoesAwayAfter(through_proxy, proxy, bulks=2)
        with pytest.raises(EngineUnavailable, match=r"writes stopped after 4 of 12 chunk writes: "):
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


def test_a_note_that_cannot_be_read_keeps_its_chunks_and_the_links_to_it(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault")
    run(vault, engine, alias, embedder)
    before = index_state(engine, alias)

    (vault / "beta.md").write_bytes(b"# Beta\n\nsaved as Latin-1: caf\xe9\n")
    again = run(vault, engine, alias, embedder)
    assert [failure["id"] for failure in again.failed] == [f"{vault / 'beta.md'}:3"]
    assert (again.chunks_indexed, again.deleted) == (0, 0)
    assert index_state(engine, alias) == before
    alpha = engine.search(alias, {"query": {"term": {"doc_id": "alpha"}}}).hits[0].source
    assert sorted(alpha["links"]) == ["beta", "gamma"]


def test_control_characters_become_spaces_and_each_word_around_them_is_found_on_the_engine(
    engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    # The Markdown parser turned NUL into U+FFFD without a word. A space in its place keeps each word findable; a
    # vertical tab, white space already, becomes one too, uncounted.
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "pump.md").write_text("# Pump\n\nPressure\x00valve stuck.\x0bReset\x07done.\n", encoding="utf-8")
    (vault / "other.md").write_text("Other note.\n", encoding="utf-8")
    report = run(vault, engine, alias, embedder)
    assert report.failed == []
    assert report.warnings == [
        "pump.md: 2 control character(s) (NUL or another C0 control) in the note replaced by spaces; the text is "
        "otherwise indexed as written"
    ]
    for word in ("pressure", "valve", "reset", "done"):
        hits = engine.search(alias, match_body(word, ["body"], size=5)).hits
        assert [hit.source["doc_id"] for hit in hits] == ["pump"], word
