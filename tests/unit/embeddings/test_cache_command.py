"""``esbridge cache stats|prune`` on a cache file of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cache import EmbeddingCache, text_key


def filled(directory: Path) -> dict[str, str]:
    with EmbeddingCache(directory) as store:
        store.put_many("old-model@1/3", [(text_key(f"t{n}"), [0.1, 0.2, 0.3]) for n in range(5)])
        store.put_many("new-model@2/3", [(text_key("t0"), [0.3, 0.2, 0.1])])
    return {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(directory)}


def test_stats_counts_vectors_per_model(tmp_path: Path) -> None:
    env = filled(tmp_path)
    shown = CliRunner().invoke(main, ["cache", "stats", "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.stdout)
    assert report["models"] == {"old-model@1/3": 5, "new-model@2/3": 1}
    assert report["path"] == str(tmp_path / "embeddings.sqlite3") and report["size_bytes"] > 0


def test_prune_drops_whole_models_and_keeps_the_rest(tmp_path: Path) -> None:
    env = filled(tmp_path)
    runner = CliRunner()
    refused = runner.invoke(main, ["cache", "prune", "--model", "old-model@1/3"], env=env, input="n\n")
    assert refused.exit_code == 1 and "cancelled" in refused.output
    pruned = runner.invoke(main, ["cache", "prune", "--model", "old-model@1/3", "--yes"], env=env)
    assert pruned.exit_code == 0, pruned.output
    assert "deleted 5 vectors of 1 model(s)" in pruned.output
    with EmbeddingCache(tmp_path) as store:
        assert store.models() == {"new-model@2/3": 1}
        assert store.get_many("new-model@2/3", [text_key("t0")], 3)[text_key("t0")] == pytest.approx([0.3, 0.2, 0.1])


def test_prune_names_what_it_does_not_know_and_needs_a_target(tmp_path: Path) -> None:
    env = filled(tmp_path)
    unknown = CliRunner().invoke(main, ["cache", "prune", "--model", "nope", "--yes"], env=env)
    assert unknown.exit_code == 1
    assert "holds no vectors of nope; it holds: old-model@1/3, new-model@2/3" in unknown.output
    bare = CliRunner().invoke(main, ["cache", "prune"], env=env)
    assert bare.exit_code == 2 and "--other-models" in bare.output


def test_stats_and_prune_on_a_missing_cache_do_not_create_it(tmp_path: Path) -> None:
    directory = tmp_path / "never-used"
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(directory)}
    shown = CliRunner().invoke(main, ["cache", "stats", "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == {"path": str(directory / "embeddings.sqlite3"), "size_bytes": 0, "models": {}}
    text = CliRunner().invoke(main, ["cache", "stats"], env=env)
    assert text.exit_code == 0 and "0 vectors" in text.output
    pruned = CliRunner().invoke(main, ["cache", "prune", "--other-models", "--yes"], env=env)
    assert pruned.exit_code == 0 and "no embedding cache at" in pruned.output
    named = CliRunner().invoke(main, ["cache", "prune", "--model", "old-model@1/3", "--yes"], env=env)
    assert named.exit_code == 1 and "no vectors of old-model@1/3" in named.output
    assert not directory.exists()
