"""``esbridge index create|list|drop|reindex``: versioned indices behind the alias."""

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
    settings_from,
    vector_dimension,
    yes_option,
)


@click.group()
def index() -> None:
    """Create, list, migrate and drop the versioned indices behind the alias."""


@index.command()
@engine_options
@index_option
def create(url: str | None, engine: str | None, config_file: Path | None, index: str | None) -> None:
    """Create the first index version and point the alias at it."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        name = index_manager(settings, adapter, dimension=vector_dimension(settings)).create()
    click.echo(f"created {name} behind alias {settings.index}")


@index.command(name="list")
@engine_options
@index_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_(url: str | None, engine: str | None, config_file: Path | None, index: str | None, as_json: bool) -> None:
    """List the versions of the index and which one the alias points to."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        state = index_manager(settings, adapter).state()
    if as_json:
        versions = [
            {"name": info.name, "docs": info.docs, "size_bytes": info.size_bytes, "current": info.name == state.current}
            for info in state.versions
        ]
        click.echo(json.dumps({"alias": state.alias, "current": state.current, "versions": versions}, indent=2))
        return
    if not state.versions:
        click.echo(f"no index versions for alias {state.alias}; run `esbridge index create`")
        return
    # The engine counts chunks (one engine document per chunk), not the source documents ingest reports.
    click.echo(f"{'':2}{'index':<32} {'chunks':>10} {'size':>10}")
    for info in state.versions:
        marker = "*" if info.name == state.current else " "
        click.echo(f"{marker:2}{info.name:<32} {info.docs:>10} {_size(info.size_bytes):>10}")
    click.echo(f"* = behind alias {state.alias}")


@index.command()
@engine_options
@index_option
@click.option(
    "--version", "version", type=click.IntRange(min=1), help="Drop only this old version (not the current one)."
)
@yes_option
def drop(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, version: int | None, yes: bool
) -> None:
    """Delete the alias and all its versions, or one old version."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    what = (
        f"version {version} of {settings.index}" if version is not None else f"{settings.index} and every version of it"
    )
    confirm(f"permanently delete {what}?", yes)
    with engine_session(settings) as adapter:
        deleted = index_manager(settings, adapter).drop(version)
    click.echo("deleted " + (", ".join(deleted) if deleted else "nothing (no versions found)"))


@index.command()
@engine_options
@index_option
@click.option("--delete-old", is_flag=True, help="Delete the previous version after the alias moved.")
@yes_option
def reindex(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, delete_old: bool, yes: bool
) -> None:
    """Build the next version with the current mapping, copy all documents, then swap the alias atomically."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    if delete_old:
        confirm(f"delete the current version of {settings.index} after the alias moved?", yes)
    with engine_session(settings) as adapter:
        outcome = index_manager(settings, adapter, dimension=vector_dimension(settings)).reindex(delete_old=delete_old)
    how = "" if outcome.server_side else " through the client (the server has no _reindex)"
    click.echo(f"copied {outcome.documents} chunks from {outcome.old} to {outcome.new}{how}; alias moved")
    if outcome.deleted_old:
        click.echo(f"deleted {outcome.old}")


def _size(size_bytes: int) -> str:
    value = float(size_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}TB"
