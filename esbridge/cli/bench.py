"""``esbridge bench DATASET``: search latency per mode on one index, or ingest throughput per backend, in one run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click
from click.core import ParameterSource

from esbridge.cli.options import check_top_n, engine_options, index_option, settings_from, top_n_option
from esbridge.cli.progress import query_progress
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.engines import connect
from esbridge.errors import IndexNotFound
from esbridge.evaluation.collections import default_index
from esbridge.evaluation.dataset import judged_queries
from esbridge.evaluation.ingest_bench import BACKENDS, known_backend
from esbridge.evaluation.latency_bench import DEFAULT_MODES, MODES, measure
from esbridge.ids import shown_path
from esbridge.query.api import query_embedding
from esbridge.query.factory import model_guard


@click.command(name="bench")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--split", default="test", show_default=True, help="The judged queries of qrels/<split>.tsv are used.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True, help="How many queries.")
@click.option(
    "--modes",
    default=",".join(DEFAULT_MODES),
    show_default=True,
    help=f"Comma-separated, from: {', '.join(MODES)}; or ingest alone (chunks/s per embedding backend).",
)
@click.option(
    "--backends",
    default=",".join(BACKENDS),
    show_default=True,
    help="--modes ingest: the embedding backends to compare, each optionally @MODEL (torch@all-MiniLM-L6-v2).",
)
@click.option(
    "--documents",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="--modes ingest: how many of the corpus' documents each backend ingests.",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True, help="Queries in flight.")
@click.option("--warmup", type=click.IntRange(min=0), default=10, show_default=True, help="Unrecorded queries first.")
@top_n_option(default=10, what="results per query")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--allow-model-mismatch",
    is_flag=True,
    default=None,
    help="Measure even if another model made the index's vectors; warns (search.allow_model_mismatch).",
)
@engine_options
@index_option
def bench_command(
    dataset: Path,
    split: str,
    limit: int,
    modes: str,
    backends: str,
    documents: int,
    concurrency: int,
    warmup: int,
    top_n: int,
    as_json: bool,
    allow_model_mismatch: bool | None,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
) -> None:
    """Latency p50/p95/p99 of BM25 only, kNN only, client hybrid and native hybrid, and their ratios.

    The queries are a BEIR folder's; the index must already hold its corpus (e.g. after `esbridge eval`).
    With --modes ingest, each of --backends instead ingests the corpus' first --documents into a scratch
    index (dropped afterwards), and chunks/s are reported per backend.
    """
    chosen = [mode.strip() for mode in modes.split(",") if mode.strip()]
    _refuse_unused_options("ingest" in chosen)
    if "ingest" in chosen:
        if len(chosen) > 1:
            raise click.BadParameter("ingest runs alone: --modes ingest", param_hint="'--modes'")
        _bench_ingest(
            settings_from(config_file, url=url, engine=engine, index=index), dataset, backends, documents, as_json
        )
        return
    if not chosen:
        raise click.BadParameter(f"no mode named; e.g. --modes {','.join(DEFAULT_MODES)}", param_hint="'--modes'")
    unknown = sorted(set(chosen) - set(MODES) - {"ingest"})
    if unknown:
        raise click.BadParameter(
            f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}", param_hint="'--modes'"
        )
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    if allow_model_mismatch:
        allowed = settings.search.model_copy(update={"allow_model_mismatch": True})
        settings = settings.model_copy(update={"search": allowed})
    top_n = check_top_n(top_n, settings)
    texts = list(judged_queries(dataset, split, limit).queries.values())
    _require_index(settings, dataset)
    # The model itself, not behind the on-disk cache: embedding time is part of what is measured. Like
    # `esbridge serve`, in child processes unless embedding.query_processes is 0.
    from esbridge.embeddings.factory import uncached_model

    model = uncached_model(query_embedding(settings), processes=settings.embedding.query_processes)
    with model as embedder:
        warning = _model_warning(settings, embedder)
        if warning is not None:
            click.echo(f"warning: {warning}", err=True)
        with query_progress(as_json, "queries", len(texts)) as advance:
            report = measure(
                settings,
                texts,
                embedder,
                modes=chosen,
                concurrency=concurrency,
                warmup=warmup,
                top_n=top_n,
                progress=advance,
            )
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
    if not report.modes:
        reasons = "; ".join(f"{mode}: {reason}" for mode, reason in report.skipped.items())
        raise click.ClickException(f"nothing was measured: every chosen mode was skipped ({reasons})")
    if as_json:
        return
    # The wall time is kept to 0.01 s: a run of a few queries can take less, and has no rate to show.
    timing = f"{report.wall_s:g}s ({report.queries / report.wall_s:.1f} queries/s)" if report.wall_s else "under 0.01s"
    click.echo(
        f"{report.queries} queries on {report.engine} index {settings.index}, concurrency {report.concurrency}, "
        f"{timing}"
    )
    click.echo(f"{'mode':<18} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for mode, values in report.modes.items():
        click.echo(f"{mode:<18} {values['p50']:>8.2f} {values['p95']:>8.2f} {values['p99']:>8.2f}")
    for mode, reason in report.skipped.items():
        click.echo(f"{mode:<18} skipped: {reason}")
    for mode, count in report.errors_by_mode().items():
        click.echo(f"{mode:<18} {count} failed search(es), the last {report.failures[-1].at_s:g}s into the run")
    if report.partial:
        first = report.partial[0]
        click.echo(
            f"{len(report.partial)} answer(s) lacked shards or a retriever, the last {report.partial[-1].at_s:g}s into "
            f"the run; the first: {first.mode} at {first.at_s:g}s: {first.reason}"
        )
    if report.failures:
        click.echo(
            f"first failure: {report.failures[0].mode} at {report.failures[0].at_s:g}s: {report.failures[0].reason}"
        )
    if report.ratios:
        click.echo("ratios of p50:")
    for name, value in report.ratios.items():
        click.echo(f"  {name:<40} {value:.3f}")


_INGEST_ONLY = {"backends": "--backends", "documents": "--documents"}
_LATENCY_ONLY = {
    "split": "--split",
    "limit": "--limit",
    "concurrency": "--concurrency",
    "warmup": "--warmup",
    "top_n": "--top-n",
    "allow_model_mismatch": "--allow-model-mismatch",
}


def _refuse_unused_options(ingest: bool) -> None:
    """Refuse an option given on the command line that the chosen modes would ignore (``--backends`` without
    ``--modes ingest`` measured the configured backend's latency, not the one named)."""
    context = click.get_current_context()
    unused = _LATENCY_ONLY if ingest else _INGEST_ONLY
    given = [flag for name, flag in unused.items() if context.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    if given:
        measured = "ingest throughput (--modes ingest)" if ingest else "search latency"
        raise click.BadParameter(
            f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply: this run measures {measured}; "
            f"{'it is' if len(given) == 1 else 'they are'} for "
            + ("search latency modes" if ingest else "--modes ingest"),
            param_hint=f"'{given[0]}'",
        )


def _require_index(settings: Settings, dataset: Path) -> None:
    """Refuse a missing index before the model loads: a cluster would answer every search with a 404. When
    ``esbridge eval`` has put the dataset in its own ``eval-<folder>`` index, say so."""
    adapter = connect(settings)
    try:
        if not adapter.index_exists(settings.index):
            evaluated = default_index(dataset)
            hint = (
                f"`esbridge eval` put {shown_path(dataset.resolve().name)} in index {evaluated}: bench that with "
                f"--index {evaluated}"
                if evaluated != settings.index and adapter.index_exists(evaluated)
                else f"`esbridge eval DATASET --index {settings.index}` ingests it"
            )
            raise IndexNotFound(
                f"index {settings.index!r} does not exist; bench searches an index that holds the corpus ({hint})",
                url=adapter.url,
                operation="bench",
                index=settings.index,
            )
    finally:
        adapter.close()


def _model_warning(settings: Settings, embedder: Embedder) -> str | None:
    """Check the query model against the index's as a search does, before any query is timed: refuse
    (``ModelMismatch``) an index whose vectors another model made, as the searches would be refused one by one;
    or the warning a forced mismatch or an unfinished re-embedding gives."""
    guard = model_guard(
        settings, settings.index, embedder, settings.field_map, allow_mismatch=settings.search.allow_model_mismatch
    )
    return asyncio.run(guard.check()) if guard is not None else None


def _bench_ingest(settings: Settings, dataset: Path, backends: str, documents: int, as_json: bool) -> None:
    from esbridge.evaluation.ingest_bench import measure_ingest

    # Once each: a backend named twice would be measured twice, and its second figure would replace the first.
    chosen = list(dict.fromkeys(backend.strip() for backend in backends.split(",") if backend.strip()))
    unknown = sorted(name for name in chosen if not known_backend(name))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown backend(s) {', '.join(unknown) or '(none named)'}; known: {', '.join(BACKENDS)}, "
            "each optionally @MODEL",
            param_hint="'--backends'",
        )

    def announce(backend: str) -> None:
        if not as_json:
            click.echo(f"ingesting with {backend} ...", err=True)

    report = measure_ingest(settings, dataset, chosen, limit=documents, progress=announce)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
    if not report.runs:
        reasons = "; ".join(f"{backend}: {reason}" for backend, reason in report.skipped.items())
        raise click.ClickException(f"nothing was measured: every backend was skipped ({reasons})")
    if as_json:
        return
    click.echo(f"{report.documents} documents of {dataset} on {report.engine}, model {settings.embedding.model}")
    width = max(10, *(len(backend) for backend in [*report.runs, *report.skipped]))
    click.echo(f"{'backend':<{width}} {'chunks':>7} {'wall s':>8} {'embed s':>8} {'index s':>8} {'chunks/s':>9}")
    for backend, run in report.runs.items():
        click.echo(
            f"{backend:<{width}} {run['chunks']:>7.0f} {run['wall_s']:>8.2f} {run['embed_s']:>8.2f} "
            f"{run['index_s']:>8.2f} {run['chunks_per_s']:>9.1f}"
        )
    for backend, reason in report.skipped.items():
        click.echo(f"{backend:<{width}} skipped: {reason}")
    for name, value in report.ratios.items():
        click.echo(f"  {name:<24} {value:.2f}")
