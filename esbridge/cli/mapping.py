"""``esbridge mapping show|diff|apply``: review and apply the index mapping."""

from __future__ import annotations

import json
from pathlib import Path

import click

from esbridge.cli.options import (
    confirm,
    engine_options,
    engine_session,
    index_manager,
    index_option,
    refuse_attached_write,
    settings_from,
    vector_dimension,
    write_attached_option,
    yes_option,
)
from esbridge.engines.factory import resolve_kind
from esbridge.mappings.diff import MappingDiff
from esbridge.mappings.parameters import parameters_from
from esbridge.mappings.schema import render_index


@click.group()
def mapping() -> None:
    """Review the index mapping and apply changes to a live index."""


@mapping.command()
@engine_options
@click.option(
    "--dialect",
    type=click.Choice(["opensearch", "elasticsearch"]),
    help="Render for this engine without connecting (default: the configured engine's; embedded: opensearch).",
)
def show(url: str | None, engine: str | None, config_file: Path | None, dialect: str | None) -> None:
    """Print the create-index body (settings and mappings) esbridge would use."""
    settings = settings_from(config_file, url=url, engine=engine)
    if dialect is None:
        kind = resolve_kind(settings)
        # The embedded engine speaks the OpenSearch dialect: its indices are created from that body.
        dialect = "opensearch" if kind == "embedded" else kind
    params = parameters_from(settings, settings.embedding.dimension)
    body = render_index("opensearch" if dialect == "opensearch" else "elasticsearch", params)
    click.echo(json.dumps(body, indent=2, sort_keys=True))


@mapping.command()
@engine_options
@index_option
@click.option("--exit-code", is_flag=True, help="Exit with 1 when there are differences (for scripts).")
def diff(url: str | None, engine: str | None, config_file: Path | None, index: str | None, exit_code: bool) -> None:
    """Show what `mapping apply` would change in the live index, and what needs a new version."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        changes = index_manager(settings, adapter, dimension=vector_dimension(settings)).diff()
    click.echo(render_diff(changes))
    if exit_code and not changes.is_empty:
        raise SystemExit(1)


@mapping.command()
@engine_options
@index_option
@write_attached_option
@yes_option
def apply(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, write_attached: bool, yes: bool
) -> None:
    """Add new fields to the live index; changes that need a new version are refused."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "change the mapping of")
    with engine_session(settings) as adapter:
        manager = index_manager(settings, adapter, dimension=vector_dimension(settings))
        pending = manager.diff()
        if pending.is_empty:
            if pending.changes:  # fields only the live index has: kept, and nothing to add
                click.echo(render_diff(pending))
                click.echo("nothing to apply: the live index holds every wanted field, and the ones above of its own")
            else:
                click.echo("nothing to apply: the live mapping matches")
            return
        click.echo(render_diff(pending))
        if not pending.needs_new_version:
            confirm(f"apply these changes to {settings.index}?", yes)
        applied = manager.apply()
    click.echo(f"applied {len(applied.additions)} field change(s) to {settings.index}")


def render_diff(changes: MappingDiff) -> str:
    if not changes.changes:
        return "no differences"
    return "\n".join(change.describe() for change in changes.changes)
