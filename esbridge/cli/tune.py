"""``esbridge tune DATASET``: the fusion settings with the best nDCG@10 on a split, written to the settings file."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import click

from esbridge.cli.evaluate import dataset_options, not_held, open_model, prepare, run_summary
from esbridge.cli.options import engine_options
from esbridge.cli.progress import progress_for, query_progress
from esbridge.config.settings import CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE
from esbridge.errors import ConfigError, DependencyMissing
from esbridge.evaluation import report, session, tuning
from esbridge.evaluation.dataset import corpus_warnings, query_warnings
from esbridge.evaluation.runner import Depth
from esbridge.ids import shown_path
from esbridge.text import where_not_utf8


@click.command(name="tune")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--split",
    default="train",
    show_default=True,
    help="qrels/<split>.tsv to tune on; figures on the split tuned on are in-sample (test: warned).",
)
@dataset_options
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Settings file to write the best [pipeline] fusion settings into "
    "(default: --config, else $ESBRIDGE_CONFIG, else ./esbridge.toml).",
)
@click.option("--dry-run", is_flag=True, help="Report the best settings without writing them.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the whole grid.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a chart of the grid (.png, .svg, .pdf, ...).",
)
@engine_options
def tune_command(
    dataset: Path,
    split: str,
    limit: int | None,
    reuse: bool,
    index: str | None,
    output: Path | None,
    dry_run: bool,
    as_json: bool,
    plot: Path | None,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
) -> None:
    """Search fusion method, weights and RRF k for the best nDCG@10 on a BEIR split; write them to the settings file.

    The choice is the grid point whose neighbourhood (itself and the adjacent weights and k) has the best
    mean nDCG@10, so a lone spike is not chosen over a broad plateau. A qpp model (weights chosen per
    query) is fitted on the same queries and written instead when its cross-validated nDCG@10 is higher.
    """
    settings, judged = prepare(
        dataset, split, limit, index, plot, {"url": url, "engine": engine, "config_file": config_file}
    )
    target, chosen_by = _tune_target(output, config_file)
    if split == "test":  # allowed: some collections (CISI, MED) have no other split
        click.echo(
            "warning: tuning on the test split: what esbridge eval reports on it with the settings chosen "
            "is in-sample, not a held-out figure",
            err=True,
        )
    if not dry_run:
        _check_writable_settings(target, chosen_by)
    grid = tuning.grid(settings.pipeline)
    with open_model(settings) as embedder:
        embedding_model = embedder.name
        settings, ingested = session.prepare_index(
            settings, dataset, embedder, reuse=reuse, progress=progress_for(as_json)
        )
        warnings = session.ingest_warnings(dataset, ingested)
        warnings.extend(query_warnings(split, judged))
        if ingested is not None:
            warnings.extend(corpus_warnings(dataset, split, judged))
        else:
            if (absent := session.absent_from_index(settings, split, judged)) is not None:
                warnings.append(absent)  # part of the dataset, e.g. an ingest interrupted before --reuse
            if (other := session.other_corpus(settings, dataset, judged)) is not None:
                warnings.append(other)
        if shadowing := _shadowing_variables(os.environ):
            warnings.insert(0, _shadowed(shadowing, target, dry_run))
        for warning in warnings:
            click.echo(f"warning: {warning}", err=True)
        with query_progress(as_json, "queries", len(judged.queries)) as advance:
            outcome = session.run(
                settings,
                judged,
                [
                    *(point.configuration for point in grid),
                    *tuning.qpp_share_configurations(settings.pipeline),
                    tuning.qpp_probe(settings.pipeline),
                ],
                embedder,
                depth=Depth(deep=False),
                progress=advance,
            )
    if not report.any_judged(judged.qrels, outcome.outcomes):
        # Every point scores 0, so the "best" would be a tie-break; writing it would replace real settings.
        held = not_held(dataset, split, outcome.index, reuse=reuse)
        raise click.ClickException(f"{held}; nothing was written")
    result = tuning.choose(grid, judged.qrels, outcome.outcomes)
    fitted = tuning.fit_qpp(
        judged.qrels, outcome.outcomes, f"{shown_path(dataset.resolve().name)} {split}", embedding_model=embedding_model
    )
    qpp_wins = isinstance(fitted, tuning.QppFit) and fitted.cross_validated > result.best.ndcg
    chosen: tuning.PipelineChoice = fitted if qpp_wins and isinstance(fitted, tuning.QppFit) else result.best.point
    if not dry_run:
        tuning.write_pipeline(target, chosen)
    if isinstance(fitted, tuning.QppFit):
        qpp_line = (
            f"qpp, cross-validated on held-out queries: {fitted.cross_validated:.4f} nDCG@10 "
            f"({'above' if qpp_wins else 'not above'} the best grid point's {result.best.ndcg:.4f})"
        )
        qpp_json: dict[str, object] = {"cross_validated_ndcg@10": round(fitted.cross_validated, 4), "chosen": qpp_wins}
    else:
        qpp_line = f"qpp not fitted: {fitted}"
        qpp_json = {"cross_validated_ndcg@10": None, "chosen": False, "reason": fitted}
    if as_json:
        summary = {
            **run_summary(dataset, split, outcome, ingested),
            **result.as_json(),
            "qpp": qpp_json,
            "written": {"fusion": chosen.fusion, "weights": chosen.weights},
            "written_to": None if dry_run else str(target),
            "target_chosen_by": chosen_by,
            "warnings": warnings,
        }
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"{shown_path(dataset.resolve().name)} {split}: {outcome.queries} queries, {len(grid)} settings and qpp "
            f"on {outcome.engine} ({outcome.run_s:g}s)"
        )
        click.echo(result.table())
        click.echo(qpp_line)
        click.echo(
            ("would write" if dry_run else "wrote")
            + f" [pipeline] {chosen.describe()} to {shown_path(target)} ({chosen_by})"
        )
    if plot is not None:
        from esbridge.evaluation.plot import tuning_chart

        tuning_chart(
            result.curves(),
            plot,
            f"{shown_path(dataset.resolve().name)} {split} ({outcome.queries} queries), {outcome.engine}: nDCG@10",
        )


def _tune_target(output: Path | None, config_file: Path | None) -> tuple[Path, str]:
    """The settings file tune writes, and what chose it: the file the settings were read from, unless --output."""
    if output is not None:
        return output, "--output"
    if config_file is not None:
        return config_file, "--config"
    from_env = os.environ.get(CONFIG_FILE_ENV)
    if from_env:
        return Path(from_env), f"${CONFIG_FILE_ENV}"
    return DEFAULT_CONFIG_FILE, "the default settings file"


_WRITTEN = ("fusion", "weights", "fusion_params")


def _shadowing_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``ESBRIDGE_*`` variables that set what tune writes ([pipeline] fusion, weights, fusion_params)."""
    names = []
    for name, value in environ.items():
        upper = name.upper()
        if upper == "ESBRIDGE_PIPELINE":
            try:
                table = json.loads(value)
            except ValueError:
                table = None
            if not isinstance(table, dict) or any(key in table for key in _WRITTEN):
                names.append(name)
        elif any(
            upper == f"ESBRIDGE_PIPELINE__{key.upper()}" or upper.startswith(f"ESBRIDGE_PIPELINE__{key.upper()}__")
            for key in _WRITTEN
        ):
            names.append(name)
    return sorted(names)


def _shadowed(names: list[str], target: Path, dry_run: bool) -> str:
    # The environment takes precedence over the settings file: searches would keep these values, or mix them
    # with the written ones (an rrf from the environment with a linear normalization from the file is refused).
    written = "would write" if dry_run else "writes"
    return (
        f"{', '.join(names)} {'sets' if len(names) == 1 else 'set'} [pipeline] settings that tune {written} to "
        f"{shown_path(target)}, and the environment takes precedence over the settings file: searches will not use "
        f"the tuned settings until {'it is' if len(names) == 1 else 'they are'} unset"
    )


def _check_writable_settings(target: Path, chosen_by: str) -> None:
    """Refuse, before the grid runs, a settings file tune could not write at the end of it."""
    try:
        import tomlkit
    except ImportError as exc:
        raise DependencyMissing("tomlkit", "eval", "writing tuned settings") from exc
    folder, shown = target.parent, shown_path(target)
    if not folder.is_dir():
        raise click.ClickException(
            f"cannot write settings file {shown} ({chosen_by}): folder {shown_path(folder)} does not exist"
        )
    if target.is_dir():
        raise click.ClickException(f"cannot write settings file {shown} ({chosen_by}): it is a folder")
    if not target.exists():
        return
    try:
        tomlkit.parse(target.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"cannot read settings file {shown} ({chosen_by}): {where_not_utf8(exc)}") from exc
    except (OSError, tomlkit.exceptions.ParseError) as exc:
        raise click.ClickException(f"cannot read settings file {shown} ({chosen_by}): {exc}") from exc
    try:  # whatever the grid chooses is written the same way, so one point tells
        tuning.updated_settings(target, tuning.GridPoint("rrf", 0.5, k=60))
    except ConfigError as exc:
        raise click.ClickException(f"cannot write settings file {shown} ({chosen_by}): {exc}") from exc
