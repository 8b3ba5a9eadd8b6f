"""``esbridge eval DATASET[@SPLIT]...``: quality of configurations on one judged collection, or on several.

``dataset_options``, ``prepare``, ``run_summary`` and ``not_held`` are shared with ``esbridge tune``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from esbridge.cli.options import engine_options, settings_from
from esbridge.cli.progress import progress_for, query_progress
from esbridge.config.settings import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.errors import ConfigError
from esbridge.evaluation import collections, report, session
from esbridge.evaluation.dataset import JudgedQueries, corpus_warnings, judged_queries, query_warnings
from esbridge.evaluation.methods import METHODS, Configuration, configurations
from esbridge.evaluation.reranking import Rerankers
from esbridge.ids import shown_path
from esbridge.ingest.report import IngestReport

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
def open_model(settings: Settings) -> Iterator[CachedEmbedder]:
    from esbridge.embeddings.factory import open_embedder

    with open_embedder(settings.index_embedding) as embedder:
        yield embedder


def prepare(
    dataset: Path, split: str, limit: int | None, index: str | None, chart: Path | None, flags: dict[str, Any]
) -> tuple[Settings, JudgedQueries]:
    from esbridge.evaluation import metrics, plot

    metrics.require()
    if chart is not None:
        problem = plot.target_problem(chart)
        if problem is not None:
            raise click.BadParameter(problem, param_hint="'--plot'")
    judged = judged_queries(dataset, split, limit)
    settings = settings_from(index=index or collections.default_index(dataset), **flags)
    return settings, judged


def run_summary(dataset: Path, split: str, outcome: session.Session, ingested: IngestReport | None) -> dict[str, Any]:
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


def not_held(folder: Path, split: str, index: str, *, reuse: bool) -> str:
    """What to say when no configuration returned a judged document: with ``reuse`` the index likely holds another
    dataset; after an ingest it holds this one (what it could not take is warned about on its own)."""
    found = f"no configuration returned any judged document of {shown_path(folder.resolve().name)} {split}"
    if not reuse:
        return f"{found} from index {index}, into which its corpus was just ingested"
    return f"{found}; index {index} may not hold this dataset (run without --reuse to ingest it)"


@click.command(name="eval")
@click.argument("datasets", nargs=-1, required=True, metavar="DATASET[@SPLIT]...")
@click.option("--split", default="test", show_default=True, help="qrels/<split>.tsv of datasets named without @SPLIT.")
@click.option(
    "--methods",
    default=DEFAULT_METHODS,
    show_default=True,
    help=f"Comma-separated configurations: {', '.join(METHODS)}; add +graph, +recency or +rerank, e.g. rrf+graph.",
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
    datasets: tuple[str, ...],
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
    """nDCG@10, Recall@100 and MRR@10 of each configuration on the judged queries of BEIR folders.

    Every query goes through each configuration of the real search pipeline; results are collapsed to
    one per document. Significance: paired two-sided t-test against --baseline (ranx). With several
    datasets (``scifact@train cisi med``), each is ingested into its own eval-<folder> index, and one
    table shows every collection and the mean over collections, tested with a stratified
    randomization test.
    """
    try:
        chosen_collections = [collections.parse_collection(argument, split) for argument in datasets]
        collections.refuse_clashes(chosen_collections)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'DATASET'") from exc
    if len(chosen_collections) > 1 and index is not None:
        raise click.BadParameter(
            "--index names one index, but each of several datasets gets its own eval-<folder> index; "
            "evaluate one dataset at a time with --index",
            param_hint="'--index'",
        )
    flags = {"url": url, "engine": engine, "config_file": config_file}
    if len(chosen_collections) == 1:
        only = chosen_collections[0]
        _eval_one(only.folder, only.split, methods, baseline, limit, reuse, index, as_json, plot, flags)
    else:
        _eval_several(chosen_collections, methods, baseline, limit, reuse, as_json, plot, flags)


def _chosen(settings: Settings, methods: str, baseline: str) -> list[Configuration]:
    try:
        chosen = configurations(methods, settings.pipeline)
    except ConfigError as exc:  # a name that is no method or switch
        raise click.BadParameter(str(exc), param_hint="'--methods'") from exc
    names = [configuration.name for configuration in chosen]
    if baseline not in names:
        raise click.BadParameter(
            f"{baseline!r} is not among --methods; choose one of: {', '.join(names)}", param_hint="'--baseline'"
        )
    return chosen


def _rerankers(chosen: list[Configuration]) -> Rerankers:
    """The re-rankers of the configurations that re-rank, loaded before any ingest: one that cannot load is
    refused at once, not after a corpus has been embedded."""
    rerankers = Rerankers()
    for configuration in chosen:
        rerankers.get(configuration.pipeline.rerank)
    return rerankers


def _evaluate(
    settings: Settings,
    folder: Path,
    split: str,
    judged: JudgedQueries,
    chosen: list[Configuration],
    embedder: CachedEmbedder,
    ingested: IngestReport | None,
    *,
    reuse: bool,
    as_json: bool,
    baseline: str,
    rerankers: Rerankers,
) -> tuple[list[report.ResultRow], dict[str, Any], session.Session, list[str]]:
    """One collection, its index prepared, through every configuration: its rows, its summary, the
    session, and its warnings."""
    with query_progress(as_json, "queries", len(judged.queries)) as advance:
        outcome = session.run(settings, judged, chosen, embedder, progress=advance, rerankers=rerankers)
    rows = report.score(judged.qrels, outcome.outcomes, baseline)
    warnings = session.ingest_warnings(folder, ingested)
    warnings.extend(query_warnings(split, judged))
    if ingested is not None:  # with --reuse the index, not corpus.jsonl, holds the documents
        warnings.extend(corpus_warnings(folder, split, judged))
    if (missing := report.baseline_missing(rows, baseline)) is not None:
        warnings.append(missing)
    answered = any(not runs.unavailable for runs in outcome.outcomes)
    if answered and not report.any_judged(judged.qrels, outcome.outcomes):
        warnings.append(not_held(folder, split, outcome.index, reuse=reuse))
    elif ingested is None and (absent := session.absent_from_index(settings, split, judged)) is not None:
        warnings.append(absent)  # part of the dataset, e.g. an ingest interrupted before --reuse
    if ingested is None and (other := session.other_corpus(settings, folder, judged)) is not None:
        warnings.append(other)
    summary = {
        **run_summary(folder, split, outcome, ingested),
        "baseline": baseline,
        "results": [row.as_json() for row in rows],
        "warnings": warnings,
    }
    return rows, summary, outcome, warnings


def _eval_one(
    dataset: Path,
    split: str,
    methods: str,
    baseline: str,
    limit: int | None,
    reuse: bool,
    index: str | None,
    as_json: bool,
    plot: Path | None,
    flags: dict[str, Any],
) -> None:
    settings, judged = prepare(dataset, split, limit, index, plot, flags)
    chosen = _chosen(settings, methods, baseline)
    with open_model(settings) as embedder:
        rerankers = _rerankers(chosen)
        settings, ingested = session.prepare_index(
            settings, dataset, embedder, reuse=reuse, progress=progress_for(as_json)
        )
        rows, summary, outcome, warnings = _evaluate(
            settings,
            dataset,
            split,
            judged,
            chosen,
            embedder,
            ingested,
            reuse=reuse,
            as_json=as_json,
            baseline=baseline,
            rerankers=rerankers,
        )
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"{shown_path(dataset.resolve().name)} {split}: {outcome.queries} queries on {outcome.engine} index "
            f"{outcome.index} ({outcome.run_s:g}s)"
        )
        click.echo(report.table(rows, baseline))
        _echo_row_warnings(rows)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if plot is not None:
        from esbridge.evaluation.plot import metrics_chart

        title = f"{shown_path(dataset.resolve().name)} {split} ({outcome.queries} queries), {outcome.engine}"
        metrics_chart(rows, plot, title)


def _eval_several(
    chosen_collections: list[collections.Collection],
    methods: str,
    baseline: str,
    limit: int | None,
    reuse: bool,
    as_json: bool,
    plot: Path | None,
    flags: dict[str, Any],
) -> None:
    prepared = [
        (collection, *prepare(collection.folder, collection.split, limit, None, plot, flags))
        for collection in chosen_collections
    ]
    chosen = [_chosen(settings, methods, baseline) for _, settings, _ in prepared]
    results: list[collections.CollectionResult] = []
    warnings: list[str] = []
    with open_model(prepared[0][1]) as embedder:
        rerankers = _rerankers([configuration for configs in chosen for configuration in configs])
        # Every index first (ingested, or checked with --reuse), so none is found missing after a long run;
        # once each: two splits of one folder share it.
        ingests: dict[str, session.Prepared] = {}
        for collection, settings, _ in prepared:
            if settings.index not in ingests:
                ingests[settings.index] = session.prepare_index(
                    settings, collection.folder, embedder, reuse=reuse, progress=progress_for(as_json)
                )
        for (collection, listed, judged), configs in zip(prepared, chosen, strict=True):
            checked, ingested = ingests[listed.index]
            settings = listed.model_copy(update={"fields": checked.fields})
            rows, summary, outcome, found = _evaluate(
                settings,
                collection.folder,
                collection.split,
                judged,
                configs,
                embedder,
                ingested,
                reuse=reuse,
                as_json=as_json,
                baseline=baseline,
                rerankers=rerankers,
            )
            values = collections.per_query(judged.qrels, outcome.outcomes)
            results.append(collections.CollectionResult(collection, rows, values, summary))
            warnings.extend(f"{collection.label}: {warning}" for warning in found)
    means = collections.mean_rows(results, baseline)
    if as_json:
        output = {
            "collections": [{"label": result.collection.label, **result.summary} for result in results],
            "baseline": baseline,
            "mean": [collections.mean_json(row) for row in means],
            "warnings": warnings,
        }
        click.echo(json.dumps(output, indent=2))
    else:
        for result in results:
            summary = result.summary
            click.echo(
                f"{result.collection.label}: {summary['queries']} queries on {summary['engine']} index "
                f"{summary['index']} ({summary['run_s']:g}s)"
            )
        for metric in ("ndcg@10", "recall@100", "mrr@10"):
            click.echo("")
            click.echo(collections.matrix_table(results, means, metric, baseline))
        if unavailable := collections.unavailable_lines(results):
            click.echo("")
            click.echo("\n".join(unavailable))
        for result in results:
            _echo_row_warnings(result.rows, prefix=f"{result.collection.label}: ")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if plot is not None:
        from esbridge.evaluation.plot import grouped_chart

        columns = [*(result.collection.label for result in results), "mean"]
        table: dict[str, dict[str, float]] = {}
        for row in means:  # only where it ran: a configuration that did not run did not score 0
            ran = {result.collection.label: _ndcg(result, row.name) for result in results if row.name in result.values}
            if ran:
                table[row.name] = {**ran, **({} if row.missing else {"mean": row.scores.get("ndcg@10", 0.0)})}
        grouped_chart(table, columns, plot, "nDCG@10 per collection and the mean over collections")


def _echo_row_warnings(rows: list[report.ResultRow], prefix: str = "") -> None:
    for row in rows:
        for warning, count in row.warnings.items():
            click.echo(f"warning: {prefix}{row.name}: {count} queries: {warning}", err=True)


def _ndcg(result: collections.CollectionResult, name: str) -> float:
    values = result.values.get(name, {}).get("ndcg@10", {})
    return sum(values.values()) / len(values) if values else 0.0
