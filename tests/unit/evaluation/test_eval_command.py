"""``esbridge eval`` on the embedded engine with a hashing embedder: argument checks and indexes that do not
hold the dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config.settings import load_settings
from esbridge.engines import connect
from esbridge.errors import ConfigError
from esbridge.evaluation import plot, session
from esbridge.evaluation.dataset import judged_queries


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if the evaluation run starts: what is checked must be refused before it."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(session, "run", refuse)


def test_limit_must_be_at_least_one(runner: CliRunner, energy: Path) -> None:
    for limit in ("0", "-5"):
        result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--limit", limit])
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--limit'" in result.output
        assert "x>=1" in result.output
    with pytest.raises(ConfigError, match="limit must be at least 1"):
        judged_queries(energy, "test", 0)


def test_a_baseline_that_is_not_among_the_methods_is_an_error_naming_them(runner: CliRunner, energy: Path) -> None:
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "bm25,default", "--baseline", "knn"]
    result = runner.invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--baseline'" in result.output
    assert "'knn' is not among --methods; choose one of: bm25, default" in result.output


@pytest.mark.parametrize(
    ("methods", "said"),
    [
        ("bm25,bm42", "unknown method 'bm42'; known: bm25"),
        ("rrf+rescore", "unknown switch 'rescore' in 'rrf+rescore'"),
        (" , ", "no method named"),
    ],
)
def test_an_unknown_method_is_a_usage_error_naming_the_option(
    runner: CliRunner, energy: Path, methods: str, said: str, no_run: None
) -> None:
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", methods])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '--methods': {said}" in result.output


def test_an_index_without_the_dataset_scores_zero_and_says_so(runner: CliRunner, energy: Path, baking: Path) -> None:
    common = ["--engine", "embedded", "--index", "shared", "--methods", "bm25,default", "--json"]
    ingested = runner.invoke(main, ["eval", str(energy), *common])
    assert ingested.exit_code == 0, ingested.output
    assert all(row["ndcg@10"] > 0 for row in json.loads(ingested.stdout)["results"])
    assert "may not hold" not in ingested.stderr

    result = runner.invoke(main, ["eval", str(baking), "--reuse", "--limit", "1", *common])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["queries"] == 1
    assert [(row["name"], row["ndcg@10"], row["mrr@10"]) for row in summary["results"]] == [
        ("bm25", 0.0, 0.0),
        ("default", 0.0, 0.0),
    ]
    warning = (
        "no configuration returned any judged document of baking test; "
        "index shared may not hold this dataset (run without --reuse to ingest it)"
    )
    other = (
        f"index shared does not hold the corpus of {baking}/corpus.jsonl as it is now: it holds 2 documents the file "
        "does not have (e.g. 'solar', 'wind') and lacks 1 of its 1 document not judged relevant (e.g. 'cake'); the "
        "figures are over what the index holds, not over this corpus (run without --reuse to bring the index in line "
        "with it)"
    )
    assert summary["warnings"] == [warning, other]
    assert f"warning: {warning}" in result.stderr


def test_tune_writes_the_settings_file_named_by_esbridge_config(
    runner: CliRunner, energy: Path, tmp_path: Path
) -> None:
    settings_file = tmp_path / "conf" / "mine.toml"
    settings_file.parent.mkdir()
    settings_file.write_text('index = "mine"\n', encoding="utf-8")
    result = runner.invoke(
        main,
        ["tune", str(energy), "--split", "test", "--engine", "embedded"],
        env={"ESBRIDGE_CONFIG": str(settings_file)},
    )
    assert result.exit_code == 0, result.output
    assert f"to {settings_file} ($ESBRIDGE_CONFIG)" in result.stdout
    assert not Path("esbridge.toml").exists()
    pipeline = load_settings(settings_file).pipeline
    assert pipeline.fusion in ("rrf", "linear", "dbsf")
    assert load_settings(settings_file).index == "mine"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing/esbridge.toml", None, "does not exist"),
        ("broken.toml", "[pipeline\n", "cannot read settings file"),
        ("number.toml", "pipeline = 3\n", "its pipeline is not a table"),
        ("list.toml", "[[pipeline]]\ntop_n = 3\n", "its pipeline is not a table"),
    ],
)
def test_tune_refuses_an_unwritable_settings_file_before_the_grid_runs(
    runner: CliRunner,
    energy: Path,
    tmp_path: Path,
    no_run: None,
    name: str,
    content: str | None,
    message: str,
) -> None:
    target = tmp_path / name
    if content is not None:
        target.write_text(content, encoding="utf-8")
    result = runner.invoke(
        main, ["tune", str(energy), "--split", "test", "--engine", "embedded", "--output", str(target)]
    )
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert f"{target} (--output)" in result.output


@pytest.mark.parametrize("command", ["eval", "tune"])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing/chart.png", "folder {folder} does not exist"),
        ("chart.txt", "use an image extension, one of"),
        ("chart", "use an image extension, one of"),
    ],
)
def test_plot_is_checked_before_the_run(
    runner: CliRunner,
    energy: Path,
    tmp_path: Path,
    no_run: None,
    command: str,
    name: str,
    message: str,
) -> None:
    chart = tmp_path / name
    args = [command, str(energy), "--split", "test", "--engine", "embedded", "--dry-run", "--plot", str(chart)]
    result = runner.invoke(main, [arg for arg in args if command == "tune" or arg != "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--plot'" in result.output
    assert f"cannot write chart {chart}" in result.output
    assert message.format(folder=chart.parent) in result.output


def test_eval_prints_its_results_before_drawing_the_chart(
    runner: CliRunner, energy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_chart(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(plot, "metrics_chart", failing_chart)
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "bm25,default", "--json"]
    result = runner.invoke(main, [*args, "--plot", str(tmp_path / "chart.svg")])
    assert isinstance(result.exception, OSError)
    assert [row["name"] for row in json.loads(result.stdout)["results"]] == ["bm25", "default"]


def test_eval_draws_an_svg_chart(runner: CliRunner, energy: Path, tmp_path: Path) -> None:
    chart = tmp_path / "chart.SVG"
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "bm25,default", "--plot", str(chart)]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert chart.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_a_native_baseline_that_did_not_run_says_why_there_is_no_significance(runner: CliRunner, energy: Path) -> None:
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "bm25,default,native", "--baseline", "native"]
    text = runner.invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "native         not available on this engine: " in text.stdout
    as_json = runner.invoke(main, [*args, "--reuse", "--json"])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.stdout)
    reason = next(row["unavailable"] for row in summary["results"] if row["name"] == "native")
    assert reason.startswith("not available on this engine: ")
    missing = f"no significance against native: native did not run ({reason})"
    assert summary["warnings"] == [missing]
    assert text.stderr.splitlines() == [f"warning: {missing}"]


def test_a_baseline_that_ran_gives_no_such_warning(runner: CliRunner, energy: Path) -> None:
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "bm25,native", "--baseline", "bm25", "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []


def test_corpus_records_that_were_not_ingested_are_named_in_the_warnings(runner: CliRunner, energy: Path) -> None:
    with (energy / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write('{"_id": "solar", "text": "a second record with the same id"}\n{not json\n')
    for reuse in ([], ["--reuse"]):
        result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", *reuse])
        assert result.exit_code == 0, result.output
        assert ("not ingested" in result.stderr) == (not reuse)  # --reuse reads no corpus
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", "--json"])
    warning = json.loads(result.stdout)["warnings"][0]
    assert warning.startswith("2 corpus records of energy were not ingested (corpus.jsonl:3: duplicate _id 'solar'")
    assert "the figures are over the rest" in warning


def test_a_corpus_without_any_document_is_refused_before_the_queries_run(
    runner: CliRunner, energy: Path, no_run: None
) -> None:
    (energy / "corpus.jsonl").write_text('{"_id": "solar", "text": 3}\n', encoding="utf-8")
    for command in (["eval", "--methods", "bm25"], ["tune", "--split", "test", "--dry-run"]):
        result = runner.invoke(main, [command[0], str(energy), "--engine", "embedded", *command[1:]])
        assert result.exit_code == 1, result.output
        assert f"{energy / 'corpus.jsonl'} gave no document to evaluate on" in result.output
        assert "corpus.jsonl:1:" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "{folder}@../test"],
        ["eval", "{folder}", "--split", "a/b"],
        ["tune", "{folder}", "--split", "..", "--dry-run"],
        ["bench", "{folder}", "--split", "../test", "--index", "eval-energy"],
    ],
)
def test_a_split_that_is_a_path_is_an_error_not_a_traceback(
    runner: CliRunner, energy: Path, no_run: None, args: list[str]
) -> None:
    result = runner.invoke(main, [arg.format(folder=energy) for arg in args] + ["--engine", "embedded"])
    assert result.exit_code == 1, result.output
    assert "Error: split must be a plain name such as 'test'" in result.output


@pytest.mark.parametrize(
    ("qrels", "said"),
    [
        ("", "holds no judgement (it is empty, or holds only its header)"),
        ("query-id\tcorpus-id\tscore\n", "holds no judgement (it is empty, or holds only its header)"),
        ("q1\tsolar\t0\nq2\twind\t0\n", "judges no document relevant to any query"),
    ],
)
@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--methods", "bm25"],
        ["tune", "--split", "test", "--dry-run"],
        ["bench", "--index", "eval-energy"],
    ],
)
def test_a_split_without_a_relevant_judgement_is_refused_before_the_run(
    runner: CliRunner, energy: Path, no_run: None, qrels: str, said: str, args: list[str]
) -> None:
    (energy / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    result = runner.invoke(main, [args[0], str(energy), *args[1:], "--engine", "embedded"])
    assert result.exit_code == 1, result.output
    assert f"{energy / 'qrels' / 'test.tsv'} {said}" in result.output


def test_tune_on_an_index_without_the_dataset_writes_nothing(
    runner: CliRunner, energy: Path, baking: Path, tmp_path: Path
) -> None:
    ingested = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--index", "shared"])
    assert ingested.exit_code == 0, ingested.output
    settings_file = tmp_path / "esbridge.toml"
    settings_file.write_text("[pipeline]\ntop_n = 10\n", encoding="utf-8")
    args = ["tune", str(baking), "--split", "test", "--engine", "embedded", "--reuse", "--index", "shared"]
    result = runner.invoke(main, [*args, "--output", str(settings_file)])
    assert result.exit_code == 1, result.output
    assert "no configuration returned any judged document of baking test; index shared may not hold" in result.output
    assert "nothing was written" in result.output
    assert settings_file.read_text(encoding="utf-8") == "[pipeline]\ntop_n = 10\n"


def test_judged_documents_missing_from_the_corpus_are_named_in_the_warnings(runner: CliRunner, energy: Path) -> None:
    with (energy / "qrels" / "test.tsv").open("a", encoding="utf-8") as qrels:
        qrels.write("q1\tgone\t1\nq2\tgone\t2\nq2\talso-gone\t1\nq2\tirrelevant\t0\n")
    result = runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    warning = (
        "qrels/test.tsv judges 2 documents relevant that are not in corpus.jsonl (e.g. 'also-gone', 'gone'); "
        "no configuration can find them"
    )
    assert json.loads(result.stdout)["warnings"] == [warning]
    assert f"warning: {warning}" in result.stderr


def test_when_no_configuration_ran_the_index_is_not_blamed(runner: CliRunner, energy: Path) -> None:
    args = ["eval", str(energy), "--engine", "embedded", "--methods", "native", "--baseline", "native", "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert [warning.split(":")[0] for warning in warnings] == ["no significance against native"]
    assert "may not hold this dataset" not in result.stderr


def test_tune_on_the_test_split_warns_that_its_figures_become_in_sample(
    runner: CliRunner, energy: Path, tmp_path: Path
) -> None:
    # Collections with only a test split (CISI, MED) are tuned on it; that is allowed, and said.
    result = runner.invoke(
        main, ["tune", str(energy), "--split", "test", "--engine", "embedded", "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert "warning: tuning on the test split" in result.stderr
    assert json.loads(result.stdout)["split"] == "test"
    help_text = runner.invoke(main, ["tune", "--help"]).stdout
    assert "never the test split" not in " ".join(help_text.split())


def test_reuse_of_an_index_holding_part_of_the_dataset_names_the_judged_documents_it_lacks(
    runner: CliRunner, energy: Path
) -> None:
    corpus = energy / "corpus.jsonl"
    whole = corpus.read_text(encoding="utf-8")
    corpus.write_text(whole.splitlines(keepends=True)[0], encoding="utf-8")  # as an ingest stopped after 'solar'
    common = ["--engine", "embedded", "--methods", "bm25", "--json"]
    assert runner.invoke(main, ["eval", str(energy), *common]).exit_code == 0
    corpus.write_text(whole, encoding="utf-8")

    result = runner.invoke(main, ["eval", str(energy), "--reuse", *common])
    assert result.exit_code == 0, result.output
    warning = (
        "index eval-energy holds no chunk of 1 of the 2 documents qrels/test.tsv judges relevant (e.g. 'wind'), so no "
        "configuration can find them: it may hold only part of this dataset (an ingest that did not finish?); run "
        "without --reuse to ingest what is missing"
    )
    assert json.loads(result.stdout)["warnings"] == [warning]
    assert f"warning: {warning}" in result.stderr

    assert runner.invoke(main, ["eval", str(energy), *common]).exit_code == 0  # ingests 'wind'
    result = runner.invoke(main, ["eval", str(energy), "--reuse", *common])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []


def test_a_re_ranker_that_cannot_load_is_refused_before_the_corpus_is_ingested(
    runner: CliRunner, energy: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-cross-encoder"
    args = ["eval", str(energy), "--engine", "embedded", "--index", "rerank-first", "--methods", "bm25,default+rerank"]
    result = runner.invoke(main, args, env={"ESBRIDGE_PIPELINE__RERANK__MODEL": str(missing)})
    assert result.exit_code == 1, result.output
    assert f"re-ranker '{missing}': model folder {missing} does not exist" in result.stderr
    engine = connect(load_settings(engine="embedded"))
    try:
        assert not engine.index_exists("rerank-first")  # nothing was embedded or written before the refusal
    finally:
        engine.close()


def test_tune_reusing_an_index_holding_part_of_the_dataset_names_the_judged_documents_it_lacks(
    runner: CliRunner, energy: Path
) -> None:
    corpus = energy / "corpus.jsonl"
    whole = corpus.read_text(encoding="utf-8")
    corpus.write_text(whole.splitlines(keepends=True)[0], encoding="utf-8")  # as an ingest stopped after 'solar'
    assert runner.invoke(main, ["eval", str(energy), "--engine", "embedded", "--methods", "bm25"]).exit_code == 0
    corpus.write_text(whole, encoding="utf-8")

    tune = ["tune", str(energy), "--split", "test", "--reuse", "--engine", "embedded", "--dry-run", "--json"]
    result = runner.invoke(main, tune)
    assert result.exit_code == 0, result.output
    warning = (
        "index eval-energy holds no chunk of 1 of the 2 documents qrels/test.tsv judges relevant (e.g. 'wind'), so no "
        "configuration can find them: it may hold only part of this dataset (an ingest that did not finish?); run "
        "without --reuse to ingest what is missing"
    )
    assert json.loads(result.stdout)["warnings"] == [warning]
    assert f"warning: {warning}" in result.stderr
