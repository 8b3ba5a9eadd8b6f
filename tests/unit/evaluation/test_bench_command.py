"""``esbridge bench`` on the embedded engine with a hashing embedder: which modes it is asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config.settings import EmbeddingSettings, load_settings
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.engines import connect
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder, beir_folder


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    def hashing(settings: EmbeddingSettings) -> HashingEmbedder:
        return HashingEmbedder()

    monkeypatch.setitem(EMBEDDERS, "hashing", hashing)
    return CliRunner(env={"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__QUERY_PROCESSES": "0"})


@pytest.fixture
def energy(tmp_path: Path) -> Path:
    docs = {"solar": "Photovoltaic cells turn sunlight into electricity."}
    return beir_folder(tmp_path / "energy", docs, {"q1": ("sunlight electricity", "solar")})


@pytest.mark.parametrize("modes", ["", " , ,"])
def test_no_mode_is_a_usage_error(runner: CliRunner, energy: Path, modes: str) -> None:
    result = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", "--modes", modes])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--modes': no mode named; e.g. --modes bm25,knn,embed,hybrid,native" in result.output


def test_an_unknown_mode_is_a_usage_error(runner: CliRunner, energy: Path) -> None:
    result = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", "--modes", "bm25,fast"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--modes': unknown mode(s) fast; known: bm25" in result.output


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--modes", "bm25", "--backends", "torch"], "--backends does not apply: this run measures search latency"),
        (["--documents", "5"], "--documents does not apply: this run measures search latency"),
        (
            ["--modes", "ingest", "--limit", "3", "--concurrency", "2"],
            "--limit, --concurrency do not apply: this run measures ingest throughput",
        ),
        (["--modes", "ingest", "--allow-model-mismatch"], "--allow-model-mismatch does not apply"),
    ],
)
def test_an_option_the_chosen_modes_would_ignore_is_a_usage_error(
    runner: CliRunner, energy: Path, options: list[str], message: str
) -> None:
    result = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", *options])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_every_mode_skipped_says_nothing_was_measured(runner: CliRunner, energy: Path, as_json: list[str]) -> None:
    ingested = runner.invoke(main, ["ingest", str(energy), "--engine", "embedded", "--index", "energy"])
    assert ingested.exit_code == 0, ingested.output
    args = ["bench", str(energy), "--engine", "embedded", "--index", "energy", "--modes", "native", "--warmup", "0"]
    result = runner.invoke(main, [*args, *as_json])
    assert result.exit_code == 1, result.output
    assert "nothing was measured: every chosen mode was skipped (native: not available on this engine" in (
        result.stderr
    )
    assert "queries/s" not in result.stdout


def test_ingest_mode_measures_each_backend_on_a_scratch_index_and_drops_it(runner: CliRunner, energy: Path) -> None:
    result = runner.invoke(
        main,
        [
            "bench", str(energy), "--engine", "embedded", "--modes", "ingest",
            "--backends", "torch@all-MiniLM-L6-v2,onnx-int8", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["documents"] == 1
    assert set(report["runs"]) == {"torch@all-MiniLM-L6-v2", "onnx-int8"}
    assert all(run["chunks"] == 1 and run["chunks_per_s"] > 0 for run in report["runs"].values())
    assert set(report["ratios"]) == {"onnx-int8 / torch@all-MiniLM-L6-v2"}
    engine = connect(load_settings(engine="embedded"))
    try:
        assert engine.list_indices("*ingest-bench*") == []
    finally:
        engine.close()


def test_ingest_mode_measures_a_backend_named_twice_once(runner: CliRunner, energy: Path) -> None:
    args = ["bench", str(energy), "--engine", "embedded", "--modes", "ingest"]
    args += ["--backends", "onnx-int8,torch,onnx-int8"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["ingesting with onnx-int8 ...", "ingesting with torch ..."]
    rows = [line.split()[0] for line in result.stdout.splitlines()[2:] if not line.startswith(" ")]
    assert rows == ["onnx-int8", "torch"]


def test_ingest_mode_runs_alone_and_knows_its_backends(runner: CliRunner, energy: Path) -> None:
    mixed = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", "--modes", "ingest,bm25"])
    assert mixed.exit_code == 2
    assert "ingest runs alone" in mixed.output
    arguments = ["bench", str(energy), "--engine", "embedded", "--modes", "ingest", "--backends", "tpu"]
    unknown = runner.invoke(main, arguments)
    assert unknown.exit_code == 2
    assert "unknown backend(s) tpu; known: torch, onnx-fp32, onnx-int8, each optionally @MODEL" in unknown.output
    no_model = runner.invoke(main, [*arguments[:-1], "torch@"])
    assert no_model.exit_code == 2
    assert "unknown backend(s) torch@" in no_model.output


def test_a_missing_index_is_refused_before_the_model_loads(
    runner: CliRunner, energy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbridge.embeddings import factory

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(factory, "uncached_model", refuse)
    result = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", "--index", "missing"])
    assert result.exit_code == 1, result.output
    assert "index 'missing' does not exist; bench searches an index that holds the corpus" in result.output


@pytest.mark.parametrize(("corpus", "message"), [(None, "BEIR corpus not found"), ("\n\n", "has no document")])
def test_ingest_mode_refuses_a_missing_or_empty_corpus(
    runner: CliRunner, energy: Path, corpus: str | None, message: str
) -> None:
    path = energy / "corpus.jsonl"
    if corpus is None:
        path.unlink()
    else:
        path.write_text(corpus, encoding="utf-8")
    args = ["bench", str(energy), "--engine", "embedded", "--modes", "ingest", "--backends", "onnx-int8"]
    result = runner.invoke(main, args)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert f"Error: {path}" in result.output or f"Error: {message}: {path}" in result.output


def test_ctrl_c_during_the_ingest_mode_says_its_scratch_index_was_dropped(
    runner: CliRunner, energy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c(*args: object, **kwargs: object) -> NoReturn:
        raise KeyboardInterrupt

    monkeypatch.setattr(HashingEmbedder, "embed", ctrl_c)
    args = ["bench", str(energy), "--engine", "embedded", "--modes", "ingest", "--backends", "onnx-int8"]
    result = runner.invoke(main, args)
    assert result.exit_code == 130, result.output
    said = result.stderr.strip().splitlines()[-1]
    assert said.startswith("interrupted: no figures are printed; the scratch index esbridge-ingest-bench-onnx-int8-")
    assert said.endswith(" is dropped, so a new run starts over"), said
    assert "kept" not in said and "writes only what is missing" not in said
    engine = connect(load_settings(engine="embedded"))
    try:
        assert engine.list_indices("*ingest-bench*") == []
    finally:
        engine.close()


def test_bench_with_another_model_than_the_index_s_is_refused_before_measuring(
    runner: CliRunner, energy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EMBEDDERS, "other", lambda settings: OtherHashingEmbedder())
    ingested = runner.invoke(main, ["ingest", str(energy), "--engine", "embedded", "--index", "energy"])
    assert ingested.exit_code == 0, ingested.output
    args = ["bench", str(energy), "--engine", "embedded", "--index", "energy", "--modes", "bm25,hybrid", "--json"]
    other = {"ESBRIDGE_EMBEDDING__PROVIDER": "other"}

    refused = runner.invoke(main, [*args, "--warmup", "0"], env=other)
    assert refused.exit_code == 1, refused.output
    assert "Error: index energy holds vectors made by hashing-32" in refused.stderr
    assert "differ in model hashing-32 vs other-hashing-32" in refused.stderr
    assert refused.stdout == ""

    forced = runner.invoke(main, [*args, "--warmup", "0", "--allow-model-mismatch"], env=other)
    assert forced.exit_code == 0, forced.output
    assert "warning: model mismatch (allowed by allow_model_mismatch): energy's vectors were made by hashing-32" in (
        forced.stderr
    )
    assert set(json.loads(forced.stdout)["modes"]) == {"bm25", "hybrid"}

    same = runner.invoke(main, [*args, "--warmup", "0"])
    assert same.exit_code == 0, same.output
    assert "warning" not in same.stderr


def test_a_missing_index_points_at_the_one_eval_put_the_dataset_in(runner: CliRunner, energy: Path) -> None:
    ingested = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25"])
    assert ingested.exit_code == 0, ingested.output
    result = runner.invoke(main, ["bench", str(energy), "--engine", "embedded", "--modes", "bm25"])
    assert result.exit_code == 1, result.output
    assert (
        "index 'esbridge' does not exist; bench searches an index that holds the corpus (`esbridge eval` put energy "
        "in index eval-energy: bench that with --index eval-energy)"
    ) in result.output
    measured = runner.invoke(
        main,
        ["bench", str(energy), "--engine", "embedded", "--modes", "bm25", "--index", "eval-energy", "--warmup", "0"],
    )
    assert measured.exit_code == 0, measured.output
    assert "bm25" in measured.output
    assert "ratios of p50" not in measured.output  # one mode: no ratio to show under the heading


def test_a_run_quicker_than_the_timed_step_is_shown_without_a_rate(
    runner: CliRunner, energy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbridge.cli import bench
    from esbridge.evaluation.latency_bench import LatencyReport

    def quick(*args: object, **kwargs: object) -> LatencyReport:  # a run of one query in under 5 ms
        return LatencyReport("embedded", 1, 1, 0.0, modes={"bm25": {"p50": 1.2, "p95": 1.2, "p99": 1.2}})

    assert runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25"]).exit_code == 0
    monkeypatch.setattr(bench, "measure", quick)
    result = runner.invoke(
        main, ["bench", str(energy), "--engine", "embedded", "--modes", "bm25", "--index", "eval-energy"]
    )
    assert result.exit_code == 0, result.output
    assert "1 queries on embedded index eval-energy, concurrency 1, under 0.01s\n" in result.output
    assert "bm25                   1.20     1.20     1.20" in result.output
