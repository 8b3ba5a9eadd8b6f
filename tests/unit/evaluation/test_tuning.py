from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from esbridge.config import load_settings
from esbridge.config.pipeline import PipelineSettings
from esbridge.errors import ConfigError
from esbridge.evaluation.runner import ConfigurationRuns
from esbridge.evaluation.tuning import (
    QPP_SHARES,
    SHARES,
    GridPoint,
    QppFit,
    fit_qpp,
    grid,
    qpp_probe,
    qpp_share_configurations,
    rank_points,
    write_pipeline,
)
from esbridge.query.fusion.qpp import PREDICTORS, QppModel
from esbridge.query.types import FusionDecision


def test_grid_covers_every_method_share_and_k_once() -> None:
    points = [candidate.point for candidate in grid()]
    assert len(points) == len(set(points)) == (5 + 3 + 1) * len(SHARES)
    assert {point.family for point in points} >= {"rrf k=10", "rrf k=100", "linear z_score", "dbsf"}
    rrf = next(c for c in grid() if c.point == GridPoint("rrf", 0.3, k=20))
    assert rrf.configuration.pipeline.fusion_params == {"k": 20}
    assert rrf.configuration.pipeline.weights == {"bm25": 0.3, "knn": 0.7}


def test_a_plateau_beats_a_lone_spike() -> None:
    spike, plateau = GridPoint("dbsf", 0.5), GridPoint("linear", 0.5, normalization="min_max")
    ndcg = {GridPoint("dbsf", share): 0.60 for share in SHARES}
    ndcg |= {GridPoint("linear", share, normalization="min_max"): 0.70 for share in SHARES}
    ndcg[spike] = 0.72
    ranked = rank_points(ndcg)
    assert ranked[0].point.family == "linear min_max"
    assert ranked[0].neighbourhood == pytest.approx(0.70)
    spiked = next(item for item in ranked if item.point == spike)
    assert spiked.neighbourhood == pytest.approx((0.72 + 0.60 + 0.60) / 3)
    assert spiked.neighbours == 2
    assert plateau in {item.point for item in ranked[:9]}


def test_neighbours_in_k_count_too() -> None:
    ndcg = {GridPoint("rrf", 0.5, k=k): value for k, value in ((10, 0.5), (20, 0.7), (40, 0.6))}
    middle = next(item for item in rank_points(ndcg) if item.point.k == 20)
    assert middle.neighbourhood == pytest.approx((0.5 + 0.7 + 0.6) / 3)


def test_writing_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "esbridge.toml"
    path.write_text(
        '# my settings\nindex = "notes"\n\n[pipeline]\nfusion = "rrf"\ntop_n_max = 80\n\n'
        "[pipeline.fusion_params]\nk = 60\n\n[pipeline.graph]\nenabled = true\n",
        encoding="utf-8",
    )
    write_pipeline(path, GridPoint("linear", 0.3, normalization="z_score"))
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# my settings\n")
    settings = load_settings(path)
    assert settings.index == "notes"
    assert settings.pipeline.fusion == "linear"
    assert settings.pipeline.weights == {"bm25": 0.3, "knn": 0.7}
    assert settings.pipeline.fusion_params == {"normalization": "z_score"}
    assert settings.pipeline.top_n_max == 80
    assert settings.pipeline.graph.enabled


def test_writing_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "new.toml"
    write_pipeline(path, GridPoint("rrf", 0.6, k=20))
    pipeline = load_settings(path).pipeline
    assert (pipeline.fusion, pipeline.fusion_params, pipeline.weights) == ("rrf", {"k": 20}, {"bm25": 0.6, "knn": 0.4})


def test_a_settings_file_that_is_not_utf8_is_left_as_it_is_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.toml"
    path.write_bytes(b"[search]\nsize = 10\n# caf\xe9\n")
    with pytest.raises(ConfigError) as refused:
        write_pipeline(path, GridPoint("rrf", 0.6, k=20))
    assert str(refused.value) == (
        f"cannot read config file {path}: line 3: invalid UTF-8: byte 0xe9 at byte offset 5 of the line (invalid "
        "continuation byte)"
    )
    assert path.read_bytes() == b"[search]\nsize = 10\n# caf\xe9\n"


def test_writing_keeps_top_level_keys_after_dotted_pipeline_keys(tmp_path: Path) -> None:
    # A [pipeline.weights] header appended here would capture `index` (and every key after it).
    path = tmp_path / "dotted.toml"
    path.write_text('url = "http://127.0.0.1:9200"\npipeline.mode = "client"\nindex = "notes"\n', encoding="utf-8")
    write_pipeline(path, GridPoint("rrf", 0.6, k=20))
    settings = load_settings(path)
    assert (settings.index, settings.url, settings.pipeline.mode) == ("notes", "http://127.0.0.1:9200", "client")
    assert (settings.pipeline.fusion, settings.pipeline.fusion_params) == ("rrf", {"k": 20})
    assert settings.pipeline.weights == {"bm25": 0.6, "knn": 0.4}


def test_an_edit_that_would_change_other_settings_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomlkit

    path = tmp_path / "esbridge.toml"
    before = 'index = "notes"\n'
    path.write_text(before, encoding="utf-8")
    real_dumps = tomlkit.dumps
    monkeypatch.setattr(tomlkit, "dumps", lambda document: real_dumps(document).replace('"notes"', '"other"'))
    with pytest.raises(ConfigError, match=r"nothing was written.*\n.*fusion = \"rrf\""):
        write_pipeline(path, GridPoint("rrf", 0.6, k=20))
    assert path.read_text(encoding="utf-8") == before


_WRITE_UNDER_A_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from esbridge.errors import ConfigError
from esbridge.evaluation.tuning import GridPoint, write_pipeline
path = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 20, resource.RLIM_INFINITY))
try:
    write_pipeline(path, GridPoint("rrf", 0.6, k=20))
except ConfigError as exc:
    print(exc)
"""


def test_a_write_that_fails_midway_leaves_the_settings_file_as_it_was(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[3]
    path = tmp_path / "esbridge.toml"
    before = 'index = "notes"\n# ' + "a long comment " * 20 + "\n[pipeline]\ntop_n_max = 80\n"
    path.write_text(before, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_UNDER_A_SIZE_LIMIT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert done.stdout.startswith(f"cannot write config file {path}:"), done.stdout + done.stderr
    assert "it is unchanged" in done.stdout
    assert path.read_text(encoding="utf-8") == before
    assert [file.name for file in tmp_path.iterdir()] == ["esbridge.toml"]


def test_writing_keeps_the_files_mode_and_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "conf" / "esbridge.toml"
    real.parent.mkdir()
    real.write_text('url = "http://elastic:secret@127.0.0.1:9201"\n', encoding="utf-8")
    real.chmod(0o600)
    link = tmp_path / "esbridge.toml"
    link.symlink_to(real)
    write_pipeline(link, GridPoint("rrf", 0.6, k=20))
    assert link.is_symlink()
    assert real.stat().st_mode & 0o777 == 0o600
    assert load_settings(link).pipeline.fusion == "rrf"


def test_the_settings_being_written_are_never_open_to_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The text is written to a temporary file before it replaces the owner-only file: made with the umask alone,
    # that file would let any local user read the password in it (and keep it open) until it was renamed.
    path = tmp_path / "esbridge.toml"
    path.write_text('url = "http://elastic:secret@127.0.0.1:9201"\n', encoding="utf-8")
    path.chmod(0o600)
    modes: list[int] = []
    fsync = os.fsync

    def noting_the_mode(descriptor: int) -> None:  # the moment the whole text is in the temporary file
        modes.append(stat.S_IMODE(os.fstat(descriptor).st_mode))
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", noting_the_mode)
    umask = os.umask(0o022)
    try:
        write_pipeline(path, GridPoint("rrf", 0.6, k=20))
    finally:
        os.umask(umask)
    assert modes == [0o600]
    assert path.stat().st_mode & 0o777 == 0o600


def qpp_outcomes(count: int) -> list[ConfigurationRuns]:
    """Grid outcomes at the qpp shares and a probe: share 0.8 ranks the relevant document first exactly
    when semantic_gap (the fourth predictor) is above 0.05, the shares other than 0.8 and 0.5 when not."""
    outcomes = {
        share: ConfigurationRuns(configuration)
        for share, configuration in zip(QPP_SHARES, qpp_share_configurations(PipelineSettings()), strict=True)
    }
    probe = ConfigurationRuns(qpp_probe(PipelineSettings()))
    for i in range(count):
        query = f"q{i}"
        gap = 0.1 if i % 2 else 0.0
        probe.decisions[query] = FusionDecision(
            reason="test", predictors=dict(zip(PREDICTORS, (0.2, 0.5, 1.0, gap, 0.2, 1.5, 0.3, 0.0), strict=True))
        )
        for share, outcome in outcomes.items():
            hit = (share == 0.8) == (gap > 0.05) and share != 0.5
            outcome.top[query] = {"rel": 2.0, "other": 1.0} if hit else {"other": 2.0, "rel": 1.0}
    return [*outcomes.values(), probe]


def test_qpp_is_fitted_on_the_grids_queries_and_beats_a_fixed_share_when_predictors_tell(tmp_path: Path) -> None:
    judgements = {f"q{i}": {"rel": 1} for i in range(80)}
    fitted = fit_qpp(judgements, qpp_outcomes(80), "synthetic train", embedding_model="org/model")
    assert isinstance(fitted, QppFit)
    assert fitted.queries == 80
    assert fitted.cross_validated == pytest.approx(1.0)  # every held-out query gets its better share
    assert fitted.model.source == "fitted by esbridge tune on synthetic train (80 queries)"
    assert fitted.model.embedding_model == "org/model"
    path = tmp_path / "esbridge.toml"
    path.write_text('index = "notes"\n', encoding="utf-8")
    write_pipeline(path, fitted)
    pipeline = load_settings(path).pipeline
    assert (pipeline.fusion, pipeline.weights) == ("qpp", {"bm25": 1.0, "knn": 1.0})
    assert QppModel.from_params(pipeline.fusion_params["model"]) == fitted.model


def test_qpp_cross_validation_counts_the_queries_it_has_no_predictors_for() -> None:
    # 40 more judged queries whose lists are too short to read (qpp falls back to equal weights, share 0.5)
    # and whose relevant document no share finds: the grid's figure counts them, so qpp's must as well.
    outcomes = qpp_outcomes(80)
    for i in range(80, 120):
        outcomes[-1].decisions[f"q{i}"] = FusionDecision(reason="a run too short to read: plain linear fusion")
        for outcome in outcomes[:-1]:
            outcome.top[f"q{i}"] = {"other": 1.0}
    judgements = {f"q{i}": {"rel": 1} for i in range(120)}
    fitted = fit_qpp(judgements, outcomes, "train", embedding_model="m")
    assert isinstance(fitted, QppFit)
    assert fitted.queries == 80
    assert fitted.cross_validated == pytest.approx(80 / 120)


def test_qpp_is_not_fitted_on_too_few_queries_or_without_its_probe() -> None:
    outcomes = qpp_outcomes(20)
    judgements = {f"q{i}": {"rel": 1} for i in range(20)}
    assert (
        fit_qpp(judgements, outcomes, "small", embedding_model="m")
        == "20 judged queries with predictors; fitting needs at least 50"
    )
    assert fit_qpp(judgements, outcomes[:-1], "small", embedding_model="m") == "no qpp probe configuration was run"
    enough = {f"q{i}": {"rel": 1} for i in range(80)}
    without_shares = qpp_outcomes(80)[1:]
    assert fit_qpp(enough, without_shares, "train", embedding_model="m") == (
        "the qpp share configurations were not run (qpp gains at kNN share 0.2)"
    )


def test_qpp_is_fitted_and_cross_validated_on_as_few_queries_as_it_accepts() -> None:
    # 55 queries: enough to fit, but a fold's training part holds 44; tune must not fail after its grid ran.
    judgements = {f"q{i}": {"rel": 1} for i in range(55)}
    fitted = fit_qpp(judgements, qpp_outcomes(55), "small train", embedding_model="m")
    assert isinstance(fitted, QppFit)
    assert fitted.queries == 55
    assert fitted.cross_validated == pytest.approx(1.0)
