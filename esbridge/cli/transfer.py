"""``esbridge export`` and ``esbridge import``: move an index between engines without re-embedding."""

from __future__ import annotations

import errno
import json
import sys
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
from esbridge.cli.output import cannot_write_standard_output
from esbridge.ids import shown_path
from esbridge.ingest.transfer import export_chunks, export_to_file, import_chunks


@click.command(name="export")
@engine_options
@index_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write, replaced only when the export succeeds (default: stdout).",
)
def export_command(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, output: Path | None
) -> None:
    """Write every chunk (text, links, metadata and vector) as JSONL."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        manager = index_manager(settings, adapter)
        if output is None:
            try:
                count = export_chunks(adapter, manager, sys.stdout)
                sys.stdout.flush()  # here, so that a full disk is reported rather than lost at exit
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # the reader stopped (`| head`): click ends quietly
                    raise
                raise cannot_write_standard_output(exc) from exc
        else:
            try:
                count = export_to_file(adapter, manager, output)
            except OSError as exc:
                raise click.ClickException(f"cannot write {shown_path(output)}: {exc.strerror or exc}") from exc
    click.echo(f"exported {count} chunks from {settings.index}", err=True)


@click.command(name="import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@engine_options
@index_option
@write_attached_option
@click.option("--json", "as_json", is_flag=True, help="Print one summary object.")
def import_command(
    path: Path,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    write_attached: bool,
    as_json: bool,
) -> None:
    """Load an `esbridge export` file into the index, keeping ids, hashes and vectors."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "import into")
    # Shards and replicas fit the cluster imported into, not the one exported from: named in the settings, they win.
    named = settings.mapping.model_fields_set & {"shards", "replicas"}
    overrides = {name: getattr(settings.mapping, name) for name in named}
    with engine_session(settings) as adapter:
        imported, failed = import_chunks(adapter, settings.index, path, overrides=overrides)
    if as_json:
        click.echo(json.dumps({"index": settings.index, "chunks_imported": imported, "failed": failed}, indent=2))
    else:
        click.echo(f"imported {imported} chunks into {settings.index}, {len(failed)} failed")
        for failure in failed:
            click.echo(f"failed: {failure['id']}: {failure['reason']}", err=True)
    if failed:
        raise SystemExit(1)
