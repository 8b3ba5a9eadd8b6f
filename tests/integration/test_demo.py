"""`esbridge demo` on a fresh data directory: the bundled vault, explained hybrid searches, no cluster."""

from __future__ import annotations

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.cli.demo import demo_files
from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document


def test_the_bundled_vault_reads_cleanly() -> None:
    vault, queries = demo_files()
    items = list(read_vault(vault))
    documents = [item for item in items if isinstance(item, Document)]
    assert len(documents) == len(items) >= 28
    assert sum(len(document.links) for document in documents) >= 60
    assert not [document.doc_id for document in documents if document.warnings]
    assert 5 <= len(queries) <= 8


def test_demo_runs_on_the_embedded_engine(embedder: CachedEmbedder) -> None:
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent)}
    result = CliRunner().invoke(main, ["demo"], env=env)
    assert result.exit_code == 0, result.output
    assert "engine: embedded" in result.output
    _, queries = demo_files()
    for query in queries:
        assert f'"{query}"  (hybrid' in result.output or f'"{query}"  (lexical-only' in result.output
    assert "found by" in result.output and "bm25 #" in result.output and "knn #" in result.output
    assert "failed" in result.output and ", 0 failed" in result.output

    again = CliRunner().invoke(main, ["demo"], env=env)
    assert again.exit_code == 0, again.output
    assert "vault: 0 notes indexed" in again.output, "a second run re-indexes nothing"


def test_demo_runs_on_a_cluster_with_url(
    engine_settings: Settings, engine: Engine, alias: str, embedder: CachedEmbedder
) -> None:
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent)}
    result = CliRunner().invoke(main, ["demo", "--url", engine_settings.url or "", "--index", alias], env=env)
    assert result.exit_code == 0, result.output
    assert f"engine: {engine_settings.engine}" in result.output
    assert "vault: 31 notes indexed" in result.output
    assert "bm25 #" in result.output and "knn #" in result.output
    assert engine.count(alias) > 31
