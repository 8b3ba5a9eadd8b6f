"""esbridge with no cluster at all: ingest, search, inspect, on the embedded engine through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.profiles import MINILM
from tests.support.ingest_runs import write_vault


def test_the_whole_job_runs_without_a_cluster(tmp_path: Path, embedder: CachedEmbedder) -> None:
    vault = write_vault(tmp_path / "vault")
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent)}
    runner = CliRunner()

    ingested = runner.invoke(main, ["ingest", str(vault), "--json"], env=env)
    assert ingested.exit_code == 0, ingested.output
    summary = json.loads(ingested.stdout)
    assert summary["documents_indexed"] == 3 and summary["failed"] == []

    again = json.loads(runner.invoke(main, ["ingest", str(vault), "--json"], env=env).stdout)
    assert (again["chunks_indexed"], again["embedded"]) == (0, 0)

    found = runner.invoke(main, ["search", "baking bread", "--json", "--explain"], env=env)
    assert found.exit_code == 0, found.output
    response = json.loads(found.stdout)
    assert response["search_mode"] == "hybrid"
    assert response["results"][0]["doc_id"] == "beta"
    assert response["results"][0]["score"] == 1.0

    info = json.loads(runner.invoke(main, ["info", "--json"], env=env).stdout)
    assert info["distribution"] == "embedded"
    listed = runner.invoke(main, ["index", "list"], env=env)
    assert "* esbridge-v1" in listed.output
    around = json.loads(runner.invoke(main, ["graph", "neighbors", "alpha", "--json"], env=env).stdout)
    assert set(around["outgoing"]) == {"beta", "gamma"}


def test_ingest_refuses_a_mass_delete_until_it_is_allowed(tmp_path: Path, embedder: CachedEmbedder) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for n in range(25):
        (vault / f"n{n}.md").write_text(f"# N{n}\n\nTurbine {n}.\n", encoding="utf-8")
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent)}
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(vault)], env=env).exit_code == 0
    for n in range(1, 25):
        (vault / f"n{n}.md").unlink()

    refused = runner.invoke(main, ["ingest", str(vault)], env=env)
    assert refused.exit_code == 1
    assert "would delete 24 of them (96%); nothing was written" in refused.output
    assert "Traceback" not in refused.output

    allowed = runner.invoke(main, ["ingest", str(vault), "--allow-mass-delete", "--json"], env=env)
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout)["deleted"] == 24


def test_a_source_that_cannot_be_read_creates_no_index(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    env = {"ESBRIDGE_EMBEDDING__MODEL": str(tmp_path / "no-model")}
    runner = CliRunner()

    failed = runner.invoke(main, ["ingest", str(folder), "--format", "jsonl", "--index", "fmt1b"], env=env)
    assert failed.exit_code == 1
    assert "JSON-lines file is not a file" in failed.output
    listed = runner.invoke(main, ["index", "list", "--index", "fmt1b", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "fmt1b-v1" not in listed.output


def test_cache_prune_other_models_keeps_the_configured_models_vectors(tmp_path: Path, embedder: CachedEmbedder) -> None:
    from esbridge.embeddings.cache import EmbeddingCache, text_key

    with EmbeddingCache(tmp_path) as store:
        store.put_many(embedder.identity, [(text_key("kept"), [0.5] * embedder.dimension)])
        store.put_many("replaced-model@0/384", [(text_key(f"old {n}"), [0.1] * 384) for n in range(3)])
    configured = {"ESBRIDGE_EMBEDDING__MODEL": MINILM, "ESBRIDGE_EMBEDDING__BACKEND": "torch"}  # the fixture's
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path), **configured}
    pruned = CliRunner().invoke(main, ["cache", "prune", "--other-models", "--yes"], env=env)
    assert pruned.exit_code == 0, pruned.output
    assert "deleted 3 vectors of 1 model(s)" in pruned.output
    with EmbeddingCache(tmp_path) as store:
        assert store.models() == {embedder.identity: 1}
