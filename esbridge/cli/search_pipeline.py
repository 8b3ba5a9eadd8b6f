"""``esbridge search-pipeline apply|show|delete``: the OpenSearch search pipeline matching the fusion settings."""

from __future__ import annotations

import json
from pathlib import Path

import click

from esbridge.cli.options import engine_options, engine_session, index_option, settings_from
from esbridge.config.settings import Settings
from esbridge.engines import Engine
from esbridge.query.native import manage
from esbridge.query.native.opensearch import pipeline_name

_name_option = click.option("--name", help="Pipeline name (default: <index>-hybrid).")


@click.group(name="search-pipeline")
def search_pipeline() -> None:
    """Install, review or remove the search pipeline for native hybrid search (OpenSearch).

    Native searches carry their pipeline in each request, so they work without one; an installed
    pipeline lets other clients run the same fusion (GET index/_search?search_pipeline=NAME).
    """


@search_pipeline.command()
@engine_options
@index_option
@_name_option
@click.option("--dry-run", is_flag=True, help="Show the change without making it.")
def apply(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, name: str | None, dry_run: bool
) -> None:
    """Create or update the pipeline from the [pipeline] fusion settings; unchanged when it already matches."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        desired = _desired(settings, adapter)
        action, current = manage.apply(adapter, name or pipeline_name(settings.index), desired, dry_run=dry_run)
    if current.diff:
        click.echo("\n".join(current.diff))
    elif current.installed is None:
        click.echo(json.dumps(desired, indent=2, sort_keys=True))
    click.echo(f"{action}: search pipeline {current.name}")


@search_pipeline.command()
@engine_options
@index_option
@_name_option
@click.option("--json", "as_json", is_flag=True, help="Print desired and installed definitions as JSON.")
def show(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, name: str | None, as_json: bool
) -> None:
    """Print the pipeline the settings describe, and how the installed one differs."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        current = manage.state(adapter, name or pipeline_name(settings.index), _desired(settings, adapter))
    if as_json:
        payload = {"name": current.name, "desired": current.desired, "installed": current.installed}
        click.echo(json.dumps({**payload, "in_sync": current.in_sync, "diff": current.diff}, indent=2))
        return
    click.echo(json.dumps(current.desired, indent=2, sort_keys=True))
    if current.installed is None:
        click.echo(f"not installed: {current.name} (esbridge search-pipeline apply installs it)")
    elif current.in_sync:
        click.echo(f"installed and in sync: {current.name}")
    else:
        click.echo("\n".join(current.diff))
        click.echo(f"installed but different: {current.name} (esbridge search-pipeline apply updates it)")


@search_pipeline.command()
@engine_options
@index_option
@_name_option
def delete(url: str | None, engine: str | None, config_file: Path | None, index: str | None, name: str | None) -> None:
    """Delete the pipeline; native searches keep working (they send their own)."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    target = name or pipeline_name(settings.index)
    with engine_session(settings) as adapter:
        manage.require_pipelines(adapter.probe())
        action = manage.delete(adapter, target)
    click.echo(f"{action}: search pipeline {target}")


def _desired(settings: Settings, adapter: Engine) -> dict[str, object]:
    return manage.desired_pipeline(settings.pipeline, adapter.probe())
