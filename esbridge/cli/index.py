"""``esbridge index create|list|inspect|drop|reindex|record-model``: versioned indices behind the alias."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from esbridge.cli.options import (
    config_path,
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
from esbridge.errors import ReindexInterrupted
from esbridge.ids import shown_path
from esbridge.mappings.lifecycle import version_name


@click.group()
def index() -> None:
    """Create, list, migrate and drop the versioned indices behind the alias."""


@index.command()
@engine_options
@index_option
@write_attached_option
def create(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, write_attached: bool
) -> None:
    """Create the first index version and point the alias at it."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "create versions of")
    with engine_session(settings) as adapter:
        name = index_manager(settings, adapter, dimension=vector_dimension(settings)).create()
    click.echo(f"created {name} behind alias {settings.index}")


@index.command()
@click.argument("name")
@engine_options
@click.option("--write", is_flag=True, help="Write the proposed [fields.NAME] table into the settings file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def inspect(
    url: str | None, engine: str | None, config_file: Path | None, name: str, write: bool, as_json: bool
) -> None:
    """Read an existing index's mapping and propose the field map that attaches esbridge to it, read-only."""
    from esbridge.attach.proposal import propose, toml_table
    from esbridge.attach.settings_file import write_field_map
    from esbridge.attach.targets import attached_mapping

    target = config_path(config_file)
    # --write creates the settings file it names; only then may it be missing.
    readable = config_file if not write or target.is_file() else None
    settings = settings_from(readable, url=url, engine=engine, index=name)
    with engine_session(settings) as adapter:
        proposal = propose(attached_mapping(adapter, name))
    table = toml_table(name, proposal.fields) if proposal.fields is not None else None
    if as_json:
        found = {
            "index": name,
            "text": proposal.text,
            "keywords": proposal.keywords,
            "dates": proposal.dates,
            "vectors": [vars(vector) for vector in proposal.vectors],
            "esbridge_schema": proposal.esbridge_schema,
            "fields": proposal.fields.model_dump(exclude_defaults=True) if proposal.fields else None,
            "notes": proposal.notes,
        }
        click.echo(json.dumps(found, indent=2))
    else:
        click.echo(f"text fields: {', '.join(proposal.text) or 'none'}")
        click.echo(f"keyword fields: {', '.join(proposal.keywords) or 'none'}")
        click.echo(f"date fields: {', '.join(proposal.dates) or 'none'}")
        for vector in proposal.vectors:
            click.echo(
                f"vector field: {vector.name} (dimension {vector.dimension}, space {vector.space or '?'}"
                + (f", engine {vector.engine})" if vector.engine else ")")
            )
        for note in proposal.notes:
            click.echo(f"note: {note}")
        if table is not None:
            click.echo("\n" + table, nl=False)
    if not write:
        return
    if proposal.fields is None or proposal.esbridge_schema:
        raise click.ClickException(f"nothing written: {proposal.notes[0]}")
    write_field_map(target, name, proposal.fields)
    click.echo(f"wrote [fields.{name}] to {shown_path(target)}; esbridge now searches {name} read-only", err=as_json)


@index.command(name="list")
@engine_options
@index_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_(url: str | None, engine: str | None, config_file: Path | None, index: str | None, as_json: bool) -> None:
    """List the versions of the index and which one the alias points to."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        state = index_manager(settings, adapter).state()
        # An alias exists as a name too: only a name behind no alias is a concrete index.
        concrete = state.current is None and not state.versions and adapter.index_exists(state.alias)
    if as_json:
        versions = [
            {
                "name": info.name,
                "docs": info.docs,
                "size_bytes": info.size_bytes,
                "health": info.health,
                "closed": info.closed,
                "current": info.name == state.current,
            }
            for info in state.versions
        ]
        click.echo(json.dumps({"alias": state.alias, "current": state.current, "versions": versions}, indent=2))
        return
    if concrete:  # `index create` refuses that name
        click.echo(
            f"{state.alias} is an index, not an alias over versions ({state.alias}-v1, ...) as esbridge makes them"
        )
        return
    foreign = state.current is not None and all(info.name != state.current for info in state.versions)
    if foreign:  # `index create` refuses it ("alias already points to ...")
        click.echo(
            f"alias {state.alias} points to {state.current}, which is not one of its versions ({state.alias}-v1, ...) "
            "as esbridge makes them"
        )
    if not state.versions:
        if not foreign:
            click.echo(f"no index versions for alias {state.alias}; run `esbridge index create`")
        return
    # The engine counts chunks (one engine document per chunk), not the source documents ingest reports.
    click.echo(f"{'':2}{'index':<32} {'chunks':>10} {'size':>10}  health")
    for info in state.versions:
        marker = "*" if info.name == state.current else " "
        if info.closed:  # the engine reports neither its chunks nor its size
            click.echo(f"{marker:2}{info.name:<32} {'-':>10} {'-':>10}  {info.health or '-'}, closed")
            continue
        click.echo(f"{marker:2}{info.name:<32} {info.docs:>10} {_size(info.size_bytes):>10}  {info.health or '-'}")
    click.echo(f"* = behind alias {state.alias}")
    if any(info.health == "red" for info in state.versions):
        click.echo(
            "red: some shards have no active copy, and the chunks they hold are not counted "
            "(GET _cluster/health/<index>?level=shards says which)"
        )


@index.command()
@engine_options
@index_option
@click.option(
    "--version", "version", type=click.IntRange(min=1), help="Drop only this old version (not the current one)."
)
@write_attached_option
@yes_option
def drop(
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    version: int | None,
    write_attached: bool,
    yes: bool,
) -> None:
    """Delete the alias and all its versions, or one old version."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "delete")
    what = (
        f"version {version} of {settings.index}" if version is not None else f"{settings.index} and every version of it"
    )
    with engine_session(settings) as adapter:  # closed during the question: the embedded engine is not held
        held = {info.name for info in index_manager(settings, adapter).state().versions}
    wanted = version_name(settings.index, version) if version is not None else None
    if not held or (wanted is not None and wanted not in held):
        click.echo(f"nothing to delete: {settings.index} has no {'such version' if wanted else 'versions'}")
        return
    confirm(f"permanently delete {what}?", yes)
    with engine_session(settings) as adapter:
        deleted = index_manager(settings, adapter).drop(version)
    click.echo("deleted " + (", ".join(deleted) if deleted else "nothing (no versions found)"))


@index.command()
@engine_options
@index_option
@click.option("--delete-old", is_flag=True, help="Delete the previous version after the alias moved.")
@write_attached_option
@yes_option
def reindex(
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    delete_old: bool,
    write_attached: bool,
    yes: bool,
) -> None:
    """Build the next version with the current mapping, copy all documents, then swap the alias atomically."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "reindex")
    if delete_old:
        confirm(f"delete the current version of {settings.index} after the alias moved?", yes)
    with engine_session(settings) as adapter:
        manager = index_manager(settings, adapter, dimension=vector_dimension(settings))
        try:
            current = manager.state().current  # none: reindex says there is nothing to copy
            before = _topology(adapter.get_index_settings(current)) if current is not None else None
        except KeyboardInterrupt as exc:
            raise ReindexInterrupted("nothing was changed") from exc
        outcome = manager.reindex(delete_old=delete_old)  # says itself what an interrupt left
        try:
            after = _topology(adapter.get_index_settings(outcome.new))
        except KeyboardInterrupt as exc:
            raise ReindexInterrupted(f"the reindex is done: {settings.index} points to {outcome.new}") from exc
    # Replicas set in place on the old version, or settings other than those that built it; the embedded engine
    # has neither shards nor replicas.
    if before is not None and after != before and not _embedded(adapter):
        click.echo(
            f"warning: {outcome.new} has {after[0]} shard(s) and {after[1]} replica(s) where {outcome.old} had "
            f"{before[0]} and {before[1]}: each new version takes [mapping] shards and replicas from the settings",
            err=True,
        )
    if outcome.left_out:
        how = f" through the client, leaving out {', '.join(outcome.left_out)} (not in esbridge's mapping)"
    else:
        how = "" if outcome.server_side else " through the client (the server has no _reindex)"
    click.echo(f"copied {outcome.documents} chunks from {outcome.old} to {outcome.new}{how}; alias moved")
    if outcome.deleted_old:
        click.echo(f"deleted {outcome.old}")


def _embedded(adapter: object) -> bool:
    from esbridge.engines.embedded import EmbeddedEngine

    return isinstance(adapter, EmbeddedEngine)


def _topology(index_settings: dict[str, Any]) -> tuple[str, str]:
    return str(index_settings.get("number_of_shards", "?")), str(index_settings.get("number_of_replicas", "?"))


def _size(size_bytes: int) -> str:
    value = float(size_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}TB"


@index.command("record-model")
@engine_options
@index_option
@write_attached_option
@click.option(
    "--in-template",
    is_flag=True,
    help="For a data stream or an alias rolled over: also record the model in the index template its next index "
    "is made from.",
)
@yes_option
def record_model_command(
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    write_attached: bool,
    in_template: bool,
    yes: bool,
) -> None:
    """Record the configured model as the one that made the index's vectors (for an index that predates model
    records), in every index behind an alias or data stream; from then on a search with another model is refused.
    `esbridge ingest` records it by itself in a new index, and after re-embedding an index whose vectors another
    model made."""
    from esbridge.embeddings.factory import open_embedder
    from esbridge.embeddings.identity import identity_of
    from esbridge.ingest.record_by_hand import record_by_hand

    settings = settings_from(config_file, url=url, engine=engine, index=index)
    refuse_attached_write(settings, write_attached, "record a model in")
    with open_embedder(settings.index_embedding) as embedder:  # an attached index's field map may name its model
        identity = identity_of(embedder)
    with engine_session(settings) as adapter:
        outcome = record_by_hand(
            adapter,
            settings.index,
            identity,
            settings.field_map.vector,
            in_template=in_template,
            confirm=lambda question: confirm(question, yes),
        )
    for line in outcome.done:
        click.echo(line)
    for warning in outcome.warnings:
        click.echo(f"warning: {warning}", err=True)
