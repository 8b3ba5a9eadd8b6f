"""``esbridge eval DATASET`` and ``esbridge tune DATASET``: retrieval quality on judged queries."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from esbridge.cli.options import engine_options, settings_from
from esbridge.cli.progress import progress_for, query_progress
from esbridge.config.settings import CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.errors import DependencyMissing
from esbridge.evaluation import report, session, tuning
from esbridge.evaluation.dataset import JudgedQueries, judged_queries
from esbridge.evaluation.methods import METHODS, configurations
from esbridge.evaluation.runner import Depth
from esbridge.ingest.pipeline import IngestReport

DEFAULT_METHODS = "bm25,knn,rrf,linear,dbsf,adaptive,default,native"


def dataset_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option(
        "--limit", type=click.IntRange(min=1), help="Only the first N judged queries (quick runs, CI)."
    )(command)
    command = click.option(
        "--reuse", is_flag=True, help="Search the index as it is; do not ingest the corpus into it first."
    )(command)
    return click.option("--index", help="Index alias to evaluate (default: eval-<dataset folder name>).")(command)


@contextmanager
def _model(settings: Settings) -> Iterator[CachedEmbedder]:
    from esbridge.embeddings.factory import open_embedder

    with open_embedder(settings.embedding) as embedder:
        yield embedder


def _prepare(
    dataset: Path, split: str, limit: int | None, index: str | None, chart: Path | None, flags: dict[str, Any]
) -> tuple[Settings, JudgedQueries]:
    from esbridge.evaluation import metrics, plot

    metrics.require()
    if chart is not None:
        problem = plot.target_problem(chart)
        if problem is not None:
            raise click.BadParameter(problem, param_hint="'--plot'")
    judged = judged_queries(dataset, split, limit)
    settings = settings_from(index=index or f"eval-{dataset.resolve().name.lower()}", **flags)
    return settings, judged


@click.command(name="eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--split", default="test", show_default=True, help="qrels/<split>.tsv to evaluate on.")
@click.option(
    "--methods",
    default=DEFAULT_METHODS,
    show_default=True,
    help=f"Comma-separated configurations: {', '.join(METHODS)}; add +graph or +recency, e.g. rrf+graph.",
)
@click.option(
    "--baseline", default="bm25", show_default=True, help="Configuration the significance tests compare with."
)
@dataset_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a `results` list.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a chart of the results (.png, .svg, .pdf, ...).",
)
@engine_options
def eval_command(
    dataset: Path,
    split: str,
    methods: str,
    baseline: str,
    limit: int | None,
    reuse: bool,
    index: str | None,
    as_json: bool,
    plot: Path | None,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
) -> None:
    """nDCG@10, Recall@100 and MRR@10 of each configuration on a BEIR folder's judged queries.

    Every query of the split goes through each configuration of the real search pipeline; results are
    collapsed to one per document. Significance: paired two-sided t-test against --baseline (ranx).
    """
    settings, judged = _prepare(
        dataset, split, limit, index, plot, {"url": url, "engine": engine, "config_file": config_file}
    )
    chosen = configurations(methods, settings.pipeline)
    names = [configuration.name for configuration in chosen]
    if baseline not in names:
        raise click.BadParameter(
            f"{baseline!r} is not among --methods; choose one of: {', '.join(names)}", param_hint="'--baseline'"
        )
    with _model(settings) as embedder:
        ingested = session.prepare_index(settings, dataset, embedder, reuse=reuse, progress=progress_for(as_json))
        with query_progress(as_json, "queries", len(judged.queries)) as advance:
            outcome = session.run(settings, judged, chosen, embedder, progress=advance)
    rows = report.score(judged.qrels, outcome.outcomes, baseline)
    warnings = []
    if (missing := report.baseline_missing(rows, baseline)) is not None:
        warnings.append(missing)
    if not report.any_judged(judged.qrels, outcome.outcomes):
        warnings.append(
            f"no configuration returned any judged document of {dataset.resolve().name} {split}; "
            f"index {outcome.index} may not hold this dataset"
            + (" (run without --reuse to ingest it)" if reuse else "")
        )
    summary = {
        **_run_summary(dataset, split, outcome, ingested),
        "baseline": baseline,
        "results": [row.as_json() for row in rows],
        "warnings": warnings,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"{dataset.resolve().name} {split}: {outcome.queries} queries on {outcome.engine} index "
            f"{outcome.index} ({outcome.run_s:g}s)"
        )
        click.echo(report.table(rows, baseline))
        for row in rows:
            for warning, count in row.warnings.items():
                click.echo(f"warning: {row.name}: {count} queries: {warning}", err=True)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if plot is not None:
        from esbridge.evaluation.plot import metrics_chart

        metrics_chart(rows, plot, f"{dataset.resolve().name} {split} ({outcome.queries} queries), {outcome.engine}")


@click.command(name="tune")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--split", default="train", show_default=True, help="qrels/<split>.tsv to tune on (never the test split)."
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
    settings, judged = _prepare(
        dataset, split, limit, index, plot, {"url": url, "engine": engine, "config_file": config_file}
    )
    target, chosen_by = _tune_target(output, config_file)
    if not dry_run:
        _check_writable_settings(target, chosen_by)
    grid = tuning.grid(settings.pipeline)
    with _model(settings) as embedder:
        embedding_model = embedder.name
        ingested = session.prepare_index(settings, dataset, embedder, reuse=reuse, progress=progress_for(as_json))
        with query_progress(as_json, "queries", len(judged.queries)) as advance:
            outcome = session.run(
                settings,
                judged,
                [*(point.configuration for point in grid), tuning.qpp_probe(settings.pipeline)],
                embedder,
                depth=Depth(deep=False),
                progress=advance,
            )
    result = tuning.choose(grid, judged.qrels, outcome.outcomes)
    fitted = tuning.fit_qpp(
        judged.qrels, outcome.outcomes, f"{dataset.resolve().name} {split}", embedding_model=embedding_model
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
            **_run_summary(dataset, split, outcome, ingested),
            **result.as_json(),
            "qpp": qpp_json,
            "written": {"fusion": chosen.fusion, "weights": chosen.weights},
            "written_to": None if dry_run else str(target),
            "target_chosen_by": chosen_by,
        }
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"{dataset.resolve().name} {split}: {outcome.queries} queries, {len(grid)} settings and qpp "
            f"on {outcome.engine} ({outcome.run_s:g}s)"
        )
        click.echo(result.table())
        click.echo(qpp_line)
        click.echo(
            ("would write" if dry_run else "wrote") + f" [pipeline] {chosen.describe()} to {target} ({chosen_by})"
        )
    if plot is not None:
        from esbridge.evaluation.plot import tuning_chart

        tuning_chart(
            result.curves(),
            plot,
            f"{dataset.resolve().name} {split} ({outcome.queries} queries), {outcome.engine}: nDCG@10",
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


def _check_writable_settings(target: Path, chosen_by: str) -> None:
    """Refuse, before the grid runs, a settings file tune could not write at the end of it."""
    try:
        import tomlkit
    except ImportError as exc:
        raise DependencyMissing("tomlkit", "eval", "writing tuned settings") from exc
    folder = target.parent
    if not folder.is_dir():
        raise click.ClickException(f"cannot write settings file {target} ({chosen_by}): folder {folder} does not exist")
    if target.is_dir():
        raise click.ClickException(f"cannot write settings file {target} ({chosen_by}): it is a folder")
    if not target.exists():
        return
    try:
        tomlkit.parse(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as exc:
        raise click.ClickException(f"cannot read settings file {target} ({chosen_by}): {exc}") from exc


def _run_summary(dataset: Path, split: str, outcome: session.Session, ingested: IngestReport | None) -> dict[str, Any]:
    """What every eval and tune report starts with: the dataset, the engine and index, the timings."""
    return {
        "dataset": str(dataset),
        "split": split,
        "engine": outcome.engine,
        "index": outcome.index,
        "queries": outcome.queries,
        "run_s": outcome.run_s,
        "ingest": ingested.as_json() if ingested is not None else None,
    }
