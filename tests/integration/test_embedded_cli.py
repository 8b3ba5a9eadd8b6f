"""esbridge with no cluster at all: ingest, search, inspect, on the embedded engine through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cached import CachedEmbedder
from tests.integration.test_ingest import write_vault


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
