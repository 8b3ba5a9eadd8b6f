"""Several collections in one evaluation: parsing DATASET[@SPLIT], the mean over collections, the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.errors import ConfigError
from esbridge.evaluation.collections import Collection, CollectionResult, matrix_table, mean_rows, parse_collection
from esbridge.evaluation.report import ResultRow
from esbridge.evaluation.significance import randomization_p_value
from tests.support.hashing import beir_folder


def test_a_dataset_is_a_folder_with_an_optional_split(tmp_path: Path) -> None:
    folder = tmp_path / "scifact"
    folder.mkdir()
    assert parse_collection(str(folder), "test") == Collection(folder, "test", "scifact")
    assert parse_collection(f"{folder}@train", "test") == Collection(folder, "train", "scifact@train")
    assert parse_collection(str(folder), "dev").label == "scifact@dev"
    odd = tmp_path / "odd@name"
    odd.mkdir()
    assert parse_collection(str(odd), "test") == Collection(odd, "test", "odd@name")
    with pytest.raises(ConfigError, match=r"dataset folder not found: .*missing"):
        parse_collection(str(tmp_path / "missing"), "test")
    with pytest.raises(ConfigError, match="nothing after '@'"):
        parse_collection(f"{folder}@", "test")
    with pytest.raises(ConfigError, match="no folder before '@'"):
        parse_collection("@train", "test")


def result(label: str, values: dict[str, dict[str, float]]) -> CollectionResult:
    rows = [ResultRow(name, {"ndcg@10": sum(v.values()) / len(v)}) for name, v in values.items()]
    return CollectionResult(
        Collection(Path(label), "test", label), rows, {name: {"ndcg@10": v} for name, v in values.items()}
    )


def test_the_mean_weighs_collections_alike_and_is_tested_by_randomization() -> None:
    big = result(
        "big", {"base": {"1": 0.5, "2": 0.5, "3": 0.5, "4": 0.5}, "new": {"1": 0.6, "2": 0.6, "3": 0.6, "4": 0.6}}
    )
    small = result("small", {"base": {"a": 0.2, "b": 0.4}, "new": {"a": 0.2, "b": 0.2}})
    means = {row.name: row for row in mean_rows([big, small], "base")}
    # base: (0.5 + 0.3) / 2; new: (0.6 + 0.2) / 2; the same mean although "new" wins 4 queries of 6.
    assert means["base"].scores["ndcg@10"] == pytest.approx(0.4)
    assert means["new"].scores["ndcg@10"] == pytest.approx(0.4)
    assert means["base"].p_values == {}
    expected = randomization_p_value([[0.1, 0.1, 0.1, 0.1], [0.0, -0.2]])
    assert means["new"].p_values["ndcg@10"] == pytest.approx(expected)
    assert expected == 1.0  # an observed macro-mean difference of 0


def test_a_configuration_missing_on_a_collection_has_no_mean() -> None:
    one = result("one", {"base": {"1": 1.0}, "new": {"1": 1.0}})
    two = result("two", {"base": {"1": 0.0}})
    means = {row.name: row for row in mean_rows([one, two], "base")}
    assert means["new"].scores == {}
    assert means["new"].missing == ("two",)
    table = matrix_table([one, two], list(means.values()), "ndcg@10", "base")
    assert table.splitlines()[1].split() == ["configuration", "one", "two", "mean"]
    assert table.splitlines()[3].split() == ["new", "1.0000", "-", "-"]


def test_eval_on_two_collections_prints_each_and_the_mean(runner: CliRunner, energy: Path, baking: Path) -> None:
    args = ["eval", str(energy), str(baking), "--engine", "embedded", "--methods", "bm25,default"]
    as_json = runner.invoke(main, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.stdout)
    assert [entry["label"] for entry in summary["collections"]] == ["energy", "baking"]
    assert [entry["index"] for entry in summary["collections"]] == ["eval-energy", "eval-baking"]
    per_collection = {
        entry["label"]: {row["name"]: row["ndcg@10"] for row in entry["results"]} for entry in summary["collections"]
    }
    for row in summary["mean"]:
        expected = (per_collection["energy"][row["name"]] + per_collection["baking"][row["name"]]) / 2
        assert row["ndcg@10"] == pytest.approx(expected, abs=1e-4)
    text = runner.invoke(main, [*args, "--reuse"])
    assert text.exit_code == 0, text.output
    header = next(line for line in text.stdout.splitlines() if line.startswith("configuration"))
    assert header.split() == ["configuration", "energy", "baking", "mean"]
    assert "mean: stratified randomization test" in text.stdout


def test_several_collections_refuse_one_index_and_a_missing_split(
    runner: CliRunner, energy: Path, baking: Path
) -> None:
    one_index = runner.invoke(main, ["eval", str(energy), str(baking), "--engine", "embedded", "--index", "x"])
    assert one_index.exit_code == 2
    assert "each of several datasets gets its own eval-<folder> index" in one_index.output
    no_split = runner.invoke(main, ["eval", str(energy), f"{baking}@train", "--engine", "embedded"])
    assert no_split.exit_code == 1
    assert "qrels" in no_split.output and "train" in no_split.output


def test_folders_that_would_share_an_index_or_a_folder_given_twice_are_refused_before_the_run(
    runner: CliRunner, energy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbridge.evaluation import session

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(session, "prepare_index", refuse)
    alias = tmp_path / "alias"
    alias.symlink_to(energy)
    clash = tmp_path / "more" / "energy"
    clash.mkdir(parents=True)
    common = ["--engine", "embedded", "--methods", "bm25"]

    for again in (f"{energy}@test", str(alias)):
        twice = runner.invoke(main, ["eval", str(energy), again, *common])
        assert twice.exit_code == 2, twice.output
        assert f"{energy.resolve()} split test is given twice" in twice.output

    same_name = runner.invoke(main, ["eval", str(energy), str(clash), *common])
    assert same_name.exit_code == 2, same_name.output
    assert f"{energy} and {clash} would share index eval-energy" in same_name.output


def test_a_folder_whose_name_no_index_may_hold_is_evaluated_in_a_valid_index(
    runner: CliRunner, energy: Path, baking: Path, tmp_path: Path
) -> None:
    spaced = energy.rename(tmp_path / "Home Energy (2024)")
    result = runner.invoke(main, ["eval", str(spaced), str(baking), "--engine", "embedded", "--methods", "bm25"])
    assert result.exit_code == 0, result.output
    assert "Home Energy (2024): 2 queries on embedded index eval-home-energy-2024-" in result.stdout

    clash = beir_folder(tmp_path / "more" / "home energy (2024)", {"x": "x"}, {"q": ("x", "x")})
    same_index = runner.invoke(main, ["eval", str(spaced), str(clash), "--engine", "embedded", "--methods", "bm25"])
    assert same_index.exit_code == 2, same_index.output
    assert "would share index eval-home-energy-2024-" in same_index.output


def test_the_same_folder_with_two_splits_shares_its_index(runner: CliRunner, energy: Path) -> None:
    (energy / "qrels" / "dev.tsv").write_text("q1\tsolar\t1\nq2\twind\t1\n", encoding="utf-8")
    result = runner.invoke(main, ["eval", str(energy), f"{energy}@dev", "--engine", "embedded", "--methods", "bm25"])
    assert result.exit_code == 0, result.output
    assert "energy: 2 queries on embedded index eval-energy" in result.stdout
    assert "energy@dev: 2 queries on embedded index eval-energy" in result.stdout


def test_a_folder_with_two_splits_is_ingested_once(runner: CliRunner, energy: Path) -> None:
    (energy / "qrels" / "dev.tsv").write_text("q1\tsolar\t1\n", encoding="utf-8")
    args = ["eval", str(energy), f"{energy}@dev", "--engine", "embedded", "--methods", "bm25", "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    ingests = [entry["ingest"] for entry in json.loads(result.stdout)["collections"]]
    assert [(ingest["chunks_indexed"], ingest["unchanged"]) for ingest in ingests] == [(2, 0), (2, 0)]


def test_several_collections_with_reuse_check_every_index_before_the_first_run(
    runner: CliRunner, energy: Path, baking: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbridge.evaluation import session

    common = ["--engine", "embedded", "--methods", "bm25"]
    assert runner.invoke(main, ["eval", str(energy), *common]).exit_code == 0

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(session, "run", refuse)
    result = runner.invoke(main, ["eval", str(energy), str(baking), "--reuse", *common])
    assert result.exit_code == 1, result.output
    assert "index 'eval-baking' does not exist" in result.output


def test_the_table_says_why_a_configuration_has_no_figures(runner: CliRunner, energy: Path, baking: Path) -> None:
    args = ["eval", str(energy), str(baking), "--engine", "embedded", "--methods", "bm25,native"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "native: not run on energy, baking: not available on this engine: " in result.stdout


def test_the_chart_leaves_out_a_configuration_that_did_not_run(
    runner: CliRunner, energy: Path, baking: Path, tmp_path: Path
) -> None:
    import matplotlib

    chart = tmp_path / "chart.svg"
    args = ["eval", str(energy), str(baking), "--engine", "embedded", "--methods", "bm25,native", "--plot", str(chart)]
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # labels as <text>, not glyph paths
        result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    svg = chart.read_text(encoding="utf-8")
    assert ">bm25<" in svg and "1.000" in svg
    assert ">native<" not in svg and "0.000" not in svg  # it did not run; it did not score 0


def test_a_baseline_that_did_not_run_gets_no_significance_key(runner: CliRunner, energy: Path, baking: Path) -> None:
    methods = ["--methods", "bm25,native", "--baseline", "native"]
    result = runner.invoke(main, ["eval", str(energy), str(baking), "--engine", "embedded", *methods])
    assert result.exit_code == 0, result.output
    assert "differs from native" not in result.stdout  # nothing was tested against it
    assert "warning: energy: no significance against native: native did not run" in result.stderr
