"""The evaluation as a regression test: 30 SciFact test queries through ``esbridge eval``'s default configuration.

The corpus is a slice: the relevant documents of those queries plus the first 400 documents of the corpus
as distractors, ingested from the test embedding cache. The full runs are benchmarks (docs/evaluation.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from tests.support.data import SCIFACT, require
from tests.support.hashing import beir_folder

QUERIES = 30
DISTRACTORS = 400
# Measured nDCG@10 of `default` on this slice (2026-11-21): OpenSearch 3.6 0.9165, Elasticsearch 9.5.3 0.9171
# with scripts/engines' English analysis (0.9141 bare), embedded 0.9144 (BM25 alone: 0.875, 0.852, 0.855).
# 0.87 leaves about four queries' worth of room for engine upgrades and ties, not for a regression in fusion
# or BM25.
THRESHOLD = {"opensearch": 0.87, "elasticsearch": 0.87, "embedded": 0.87}


def scifact_slice(target: Path) -> Path:
    """A BEIR folder with the first ``QUERIES`` judged test queries and a corpus slice."""
    source = require(SCIFACT)
    judged: dict[str, list[str]] = {}
    for line in (source / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, doc, _ = line.split("\t")
        if query in judged or len(judged) < QUERIES:
            judged.setdefault(query, []).append(doc)
    relevant = {doc for docs in judged.values() for doc in docs}
    corpus = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [line for number, line in enumerate(corpus) if number < DISTRACTORS or json.loads(line)["_id"] in relevant]
    queries = [
        line
        for line in (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["_id"] in judged
    ]
    (target / "qrels").mkdir(parents=True)
    (target / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (target / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    rows = [f"{query}\t{doc}\t1" for query, docs in judged.items() for doc in docs]
    (target / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    return target


def evaluate(args: list[str], embedder: CachedEmbedder, **env: str) -> dict[str, dict[str, float]]:
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent), **env}
    result = CliRunner().invoke(main, ["eval", *args, "--methods", "bm25,default,native", "--json"], env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["queries"] == QUERIES
    return {row["name"]: row for row in summary["results"]}


def check(rows: dict[str, dict[str, float]], engine: str) -> None:
    assert rows["default"]["ndcg@10"] >= THRESHOLD[engine], rows
    assert rows["default"]["ndcg@10"] > rows["bm25"]["ndcg@10"], rows
    assert 0 < rows["default"]["mrr@10"] <= 1 and 0 < rows["default"]["recall@100"] <= 1
    assert "unavailable" in rows["native"] or "ndcg@10" in rows["native"]


def test_default_configuration_on_a_cluster(
    tmp_path: Path, engine_kind: str, engine_settings: Settings, alias: str, embedder: CachedEmbedder
) -> None:
    folder = scifact_slice(tmp_path / "scifact")
    rows = evaluate([str(folder), "--url", str(engine_settings.url), "--index", alias], embedder)
    check(rows, engine_kind)


def test_default_configuration_on_the_embedded_engine(tmp_path: Path, embedder: CachedEmbedder) -> None:
    folder = scifact_slice(tmp_path / "scifact")
    rows = evaluate([str(folder), "--engine", "embedded"], embedder, ESBRIDGE_DATA_DIR=str(tmp_path / "data"))
    check(rows, "embedded")


def test_tune_writes_the_best_grid_point_into_the_settings_file(tmp_path: Path, embedder: CachedEmbedder) -> None:
    folder = scifact_slice(tmp_path / "scifact")
    settings_file = tmp_path / "esbridge.toml"
    settings_file.write_text('index = "mine"\n\n[pipeline]\ntop_n_max = 80\n', encoding="utf-8")
    env = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(embedder.cache.path.parent), "ESBRIDGE_DATA_DIR": str(tmp_path / "d")}
    args = ["tune", str(folder), "--split", "test", "--engine", "embedded", "--output", str(settings_file), "--json"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert len(summary["grid"]) == 81
    assert summary["grid"][0] == summary["best"]
    # 30 judged queries are too few to fit qpp, so the grid's best is written, and the output says why.
    assert summary["qpp"]["chosen"] is False
    assert "fitting needs at least 50" in summary["qpp"]["reason"]
    assert summary["written"] == {"fusion": summary["best"]["fusion"], "weights": summary["best"]["weights"]}
    best_neighbourhood = max(point["neighbourhood_ndcg@10"] for point in summary["grid"])
    assert summary["best"]["neighbourhood_ndcg@10"] == best_neighbourhood
    pipeline = load_settings(settings_file).pipeline
    assert (pipeline.fusion, pipeline.weights, pipeline.fusion_params) == (
        summary["best"]["fusion"],
        summary["best"]["weights"],
        summary["best"]["fusion_params"],
    )
    assert pipeline.top_n_max == 80
    assert load_settings(settings_file).index == "mine"


def test_bench_refuses_an_index_that_does_not_exist(tmp_path: Path, engine_settings: Settings, alias: str) -> None:
    # A cluster answers each search with a 404 that bench counted as a failed search, and it exited 0.
    folder = beir_folder(tmp_path / "energy", {"solar": "Sunlight into electricity."}, {"q1": ("sunlight", "solar")})
    args = ["bench", str(folder), "--url", str(engine_settings.url), "--index", alias, "--warmup", "0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"index '{alias}' does not exist" in result.output
