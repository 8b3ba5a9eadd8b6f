"""``esbridge info``: what engine answers at the configured URL and what it can do."""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import BaseModel

from esbridge.cli.options import engine_options, settings_from
from esbridge.embeddings.identity import ModelIdentity, recorded_identity
from esbridge.engines import Capabilities, Engine, connect


@click.command()
@engine_options
@click.option(
    "--index",
    help="Also show this index (alias): the indices behind it and the model its vectors were made with.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the capabilities as one JSON object.")
def info(url: str | None, engine: str | None, config_file: Path | None, index: str | None, as_json: bool) -> None:
    """Probe the engine: distribution, version, health, vector search and native hybrid features."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    adapter = connect(settings)
    try:
        capabilities = adapter.probe()
        model = index_model(adapter, settings.index) if index is not None else None
    finally:
        adapter.close()
    if as_json:
        answer = capabilities.model_dump(mode="json")
        if model is not None:
            answer["index"] = model.model_dump(mode="json")
        click.echo(json.dumps(answer, indent=2, sort_keys=True))
    else:
        click.echo(render(capabilities))
        if model is not None:
            click.echo(render_index_model(model))


class IndexModel(BaseModel):
    """An index (alias), the concrete indices behind it, and the model its mapping records."""

    name: str
    indices: list[str]
    model: ModelIdentity | None
    """None: the index records no model (made before esbridge recorded models, or not by esbridge, or empty)"""
    empty: bool = False
    """it records no model and holds no chunk yet, as a new index or one whose first ingest was stopped"""


def index_model(engine: Engine, index: str) -> IndexModel:
    """What ``index`` records about its model; IndexNotFound when there is no such index or alias."""
    mapping = engine.get_mapping(index)
    model = recorded_identity(mapping, index)
    indices = engine.alias_targets(index) or [index]
    return IndexModel(name=index, indices=indices, model=model, empty=model is None and engine.count(index) == 0)


def render_index_model(found: IndexModel) -> str:
    """The index and its model, one field a line, aligned like ``render``."""
    rows = [("Index", f"{found.name} -> {', '.join(found.indices)}")]
    model = found.model
    if model is None and found.empty:
        rows.append(("Model", "not recorded yet: the index is empty (the first ingest or import of vectors does it)"))
    elif model is None:
        rows.append(("Model", "not recorded (the index predates model records or was not made by esbridge)"))
    else:
        rows += [
            ("Model", model.name),
            ("  backend", f"{model.backend} {model.precision}"),
            ("  weights", f"sha256 {model.weights}" if model.weights else "not hashed (files not found)"),
            ("  revision", model.revision or "-"),
            ("  dimension", str(model.dimension)),
            ("  pooling", f"{model.pooling}, {'normalized' if model.normalize else 'not normalized'}"),
            ("  query prompt", repr(model.query_prompt) if model.query_prompt else "-"),
            ("  passage prompt", repr(model.passage_prompt) if model.passage_prompt else "-"),
            ("  max tokens", str(model.max_tokens) if model.max_tokens is not None else "-"),
        ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}".rstrip() for label, value in rows)


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
