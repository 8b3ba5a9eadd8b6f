"""``esbridge info``: what engine answers at the configured URL and what it can do."""

from __future__ import annotations

import json
from pathlib import Path

import click

from esbridge.cli.options import engine_options, settings_from
from esbridge.engines import Capabilities, connect


@click.command()
@engine_options
@click.option("--json", "as_json", is_flag=True, help="Print the capabilities as one JSON object.")
def info(url: str | None, engine: str | None, config_file: Path | None, as_json: bool) -> None:
    """Probe the engine: distribution, version, health, vector search and native hybrid features."""
    settings = settings_from(config_file, url=url, engine=engine)
    adapter = connect(settings)
    try:
        capabilities = adapter.probe()
    finally:
        adapter.close()
    if as_json:
        click.echo(json.dumps(capabilities.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        click.echo(render(capabilities))


def render(capabilities: Capabilities) -> str:
    """A readable, aligned summary of ``capabilities``."""
    yes_no = {True: "yes", False: "no"}
    rows = [
        ("Engine", f"{capabilities.distribution} {capabilities.version}"),
        ("URL", capabilities.url),
        ("Cluster", f"{capabilities.cluster_name or '?'} (health: {capabilities.health or 'unknown'})"),
        ("Vector search", yes_no[capabilities.knn]),
    ]
    if capabilities.license is not None:
        rows.append(("Licence", capabilities.license))
    if capabilities.plugins:
        rows.append(("Plugins", ", ".join(f"{name} {version}" for name, version in capabilities.plugins.items())))
    rows.append(("Native hybrid", ""))
    rows.extend((f"  {feature}", yes_no[on]) for feature, on in capabilities.native_hybrid.items())
    rows.extend(("Note", note) for note in capabilities.notes)
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}".rstrip() for label, value in rows)
