"""``esbridge ingest PATH`` and ``esbridge embed --missing``: load sources into the index."""

from __future__ import annotations

import json
from pathlib import Path

import click

from esbridge.cli.options import (
    engine_options,
    engine_session,
    index_manager,
    index_option,
    refuse_attached_write,
    settings_from,
    write_attached_option,
)
from esbridge.cli.progress import progress_for
from esbridge.config.settings import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.errors import ModelUnavailable
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.model_record import refuse_several_indices
from esbridge.ingest.refusals import MAX_DELETE_SHARE
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.sources import FORMATS


def _open_embedder(settings: Settings) -> tuple[CachedEmbedder | None, str | None]:
    from esbridge.embeddings.factory import open_embedder

    try:
        return open_embedder(settings.embedding), None
    except ModelUnavailable as exc:
        return None, str(exc)


@click.command(name="ingest")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--format", "source_format", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--source", help="Label of this source in the index (default: the folder or file name).")
@click.option(
    "--allow-mass-delete",
    is_flag=True,
    help="Let this run delete more than half of the chunks the index holds for the source "
    "(refused otherwise, before anything is written).",
)
@engine_options
@index_option
@write_attached_option
@click.option("--json", "as_json", is_flag=True, help="Print one summary object.")
def ingest_command(
    path: Path,
    source_format: str,
    source: str | None,
    allow_mass_delete: bool,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    write_attached: bool,
    as_json: bool,
) -> None:
    """Index a Markdown vault, a JSONL file or a BEIR corpus; re-runs only write what changed."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "ingest into")
    embedder, model_problem = _open_embedder(settings)
    try:
        with engine_session(settings) as adapter:
            dimension = embedder.dimension if embedder is not None else None
            report = ingest(
                path,
                engine=adapter,
                manager=index_manager(settings, adapter, dimension=dimension),
                embedder=embedder,
                options=IngestOptions(
                    source_format=source_format,  # type: ignore[arg-type]
                    source=source,
                    max_delete_share=1.0 if allow_mass_delete else MAX_DELETE_SHARE,
                    concepts=settings.pipeline.concepts.vocabulary if settings.pipeline.concepts.enabled else 0,
                ),
                progress=progress_for(as_json),
            )
    finally:
        if embedder is not None:
            embedder.close()
    if model_problem:
        report.warnings.insert(0, model_problem)
    _print(report, as_json)
    if report.failed:
        raise SystemExit(1)


@click.command(name="embed")
@click.option("--missing", is_flag=True, required=True, help="Embed every chunk indexed without a vector.")
@engine_options
@index_option
@write_attached_option
@click.option("--json", "as_json", is_flag=True, help="Print one summary object.")
def embed_command(
    missing: bool,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    write_attached: bool,
    as_json: bool,
) -> None:
    """Fill in the vectors of chunks that were indexed while the model was unavailable."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "write vectors into")
    from esbridge.embeddings.factory import open_embedder

    with open_embedder(settings.embedding) as embedder, engine_session(settings) as adapter:
        manager = index_manager(settings, adapter)
        refuse_several_indices(adapter, manager.alias, what="embed --missing")  # (before the alias is resolved)
        manager.current()  # no index behind the alias: IndexNotFound, naming `esbridge index create`
        # Through the alias, so a reindex that moves it meanwhile gets the vectors written after the move.
        report = embed_missing(adapter, manager.alias, embedder, progress=progress_for(as_json))
    _print(report, as_json)
    if report.failed:
        raise SystemExit(1)


def _print(report: IngestReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
        return
    t = report.timings
    click.echo(
        f"{report.index}: {report.documents_indexed} documents, {report.chunks_indexed} chunks written, "
        f"{report.unchanged} unchanged, {report.deleted} deleted, {len(report.failed)} failed "
        f"(parse {t['parse_s']:.1f}s, embed {t['embed_s']:.1f}s, index {t['index_s']:.1f}s)"
    )
    if report.model_recorded:
        click.echo(f"{report.index} records {report.model_recorded} as the model of its vectors")
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for failure in report.failed:
        click.echo(f"failed: {failure['id']}: {failure['reason']}", err=True)
