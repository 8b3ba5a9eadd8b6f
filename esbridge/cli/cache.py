"""``esbridge cache stats|prune``: the on-disk cache of embeddings, vectors by model and exact text.

The cache only grows: a changed text adds a row and leaves the old one, and a new model (or new model
files) starts a set of its own. ``prune`` drops whole models, which is where the space goes when a
model is replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from esbridge.cli.options import config_option, confirm, settings_from, yes_option
from esbridge.config.settings import Settings
from esbridge.embeddings.cache import EmbeddingCache, cache_path, model_of
from esbridge.ids import shown_path


@click.group()
def cache() -> None:
    """Inspect and prune the embedding cache."""


@cache.command()
@config_option
@click.option("--json", "as_json", is_flag=True)
def stats(config_file: Path | None, as_json: bool) -> None:
    """The cache file, its size, and how many vectors each model identity has stored."""
    settings = settings_from(config_file)
    path = cache_path(settings.embedding.cache_dir)
    models: dict[str, int] = {}
    if path.exists():  # a read command: opening a missing cache would create it
        with EmbeddingCache(settings.embedding.cache_dir) as store:
            models = store.models()
    size = _size_on_disk(path)
    if as_json:
        click.echo(json.dumps({"path": str(path), "size_bytes": size, "models": models}, indent=2))
        return
    click.echo(f"{shown_path(path)}: {size / 1e6:.1f} MB, {sum(models.values())} vectors")
    for model, count in models.items():
        click.echo(f"  {count:>10}  {model}")


@cache.command()
@config_option
@click.option("--model", "models", multiple=True, help="A model identity as `esbridge cache stats` lists it.")
@click.option(
    "--other-models",
    is_flag=True,
    help="Every model but the configured one (loads the model to learn its identity).",
)
@yes_option
def prune(config_file: Path | None, models: tuple[str, ...], other_models: bool, yes: bool) -> None:
    """Delete the vectors of whole models, and give the space back."""
    if not models and not other_models:
        raise click.UsageError("name what to delete: --model IDENTITY (repeatable) or --other-models")
    settings = settings_from(config_file)
    path = cache_path(settings.embedding.cache_dir)
    if not path.exists():  # opening it would create it
        if models:
            raise click.ClickException(
                f"there is no embedding cache at {shown_path(path)}, so no vectors of {', '.join(models)}"
            )
        click.echo(f"nothing to delete: there is no embedding cache at {shown_path(path)}")
        return
    keep = model_of(_configured_identity(settings)) if other_models else None
    with EmbeddingCache(settings.embedding.cache_dir) as store:
        stored = store.models()
        unknown = sorted(set(models) - set(stored))
        if unknown:
            raise click.ClickException(
                f"the cache holds no vectors of {', '.join(unknown)}; it holds: {', '.join(stored) or 'nothing'}"
            )
        # The configured model's vectors at another batch size are still its own.
        chosen = set(models) | ({model for model in stored if model_of(model) != keep} if other_models else set())
        if not chosen:
            click.echo(f"nothing to delete: the cache holds only {keep}")
            return
        vectors = sum(stored[model] for model in chosen)
        confirm(f"delete {vectors} vectors of {len(chosen)} model(s) from {shown_path(store.path)}?", yes)
        deleted = store.drop(chosen)
    click.echo(f"deleted {deleted} vectors of {len(chosen)} model(s)")


def _configured_identity(settings: Settings) -> str:
    from esbridge.embeddings.factory import uncached_model

    with uncached_model(settings.embedding) as model:
        return model.identity


def _size_on_disk(path: Path) -> int:
    """The database file and its write-ahead log, which holds the latest writes until a checkpoint."""
    return sum(part.stat().st_size for part in (path, path.with_name(path.name + "-wal")) if part.exists())
