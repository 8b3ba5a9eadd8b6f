"""Options shared by commands, and turning them into settings."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from esbridge.config.fields import WRITE_ATTACHED_FLAG
from esbridge.config.pipeline import PipelineSettings
from esbridge.config.settings import CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, Settings, load_settings
from esbridge.engines import Engine, connect
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import parameters_from

F = TypeVar("F", bound=Callable[..., Any])


def config_option(command: F) -> F:
    """``--config``: the settings file."""
    return click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Settings file (default: $ESBRIDGE_CONFIG, else ./esbridge.toml if present).",
    )(command)


def engine_options(command: F) -> F:
    """``--url``, ``--engine`` and ``--config``: which engine to talk to, overriding other settings."""
    command = config_option(command)
    command = click.option(
        "--engine",
        type=click.Choice(["auto", "opensearch", "elasticsearch", "embedded"]),
        help="Engine kind (default: auto, detected from the server).",
    )(command)
    return click.option("--url", help="Engine URL, e.g. http://127.0.0.1:9200 (overrides ESBRIDGE_URL).")(command)


def index_option(command: F) -> F:
    return click.option("--index", help="Index alias to use (overrides ESBRIDGE_INDEX).")(command)


def top_n_option(default: int, what: str = "results") -> Callable[[F], F]:
    """``--top-n``: at least 1; at most ``pipeline.top_n_max``, which is known only once the settings are loaded,
    so the command checks that bound with ``check_top_n``."""
    top_n_max = PipelineSettings.model_fields["top_n_max"].default
    return click.option(
        "--top-n",
        type=click.IntRange(min=1),
        default=default,
        show_default=True,
        help=f"How many {what}; at most the setting pipeline.top_n_max (default {top_n_max}).",
    )


def check_top_n(top_n: int, settings: Settings) -> int:
    """The ``--top-n`` to search with. One given above ``pipeline.top_n_max`` is refused before any work, as the
    search would refuse it; the option's default is lowered to that bound, since the user asked for no number."""
    top_n_max = settings.pipeline.top_n_max
    if top_n <= top_n_max:
        return top_n
    context = click.get_current_context(silent=True)
    if context is not None and context.get_parameter_source("top_n") is click.core.ParameterSource.DEFAULT:
        return top_n_max
    raise click.BadParameter(
        f"{top_n} is more than the setting pipeline.top_n_max ({top_n_max}); raise that setting to ask for more",
        param_hint="'--top-n'",
    )


def settings_from(config_file: Path | None = None, **flags: Any) -> Settings:
    """Settings from every source, with the command-line flags given taking precedence."""
    return load_settings(config_file, **flags)


def config_path(config_file: Path | None) -> Path:
    """The settings file commands read and ``--write`` options write: ``--config``, else $ESBRIDGE_CONFIG,
    else ./esbridge.toml."""
    if config_file is not None:
        return config_file
    return Path(os.environ.get(CONFIG_FILE_ENV) or DEFAULT_CONFIG_FILE)


def write_attached_option(command: F) -> F:
    """``--write-attached``: allow a write into an attached index (one with a [fields.<index>] field map)."""
    return click.option(
        WRITE_ATTACHED_FLAG,
        "write_attached",
        is_flag=True,
        help="Allow writing into an attached index (one esbridge did not create); it is read-only without this.",
    )(command)


def refuse_attached_write(settings: Settings, write_attached: bool, what: str) -> None:
    """Refuse ``what`` on an attached index (it has a ``[fields.<index>]`` table) unless ``--write-attached``."""
    from esbridge.attach.guard import refuse_write

    refuse_write(settings.index, settings.attached, write_attached, what)


def yes_option(command: F) -> F:
    return click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")(command)


def confirm(question: str, yes: bool) -> None:
    """Ask before something destructive; ``--yes`` answers for the user, a closed stdin answers no, Ctrl-C
    interrupts (exit code 130)."""
    if yes:
        return
    try:
        agreed = click.confirm(question, default=False)
    except click.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise  # Ctrl-C is an interrupt (exit 130), not an answer
        click.echo(err=True)  # end of input: nothing was agreed to
        agreed = False
    if not agreed:
        raise click.ClickException("cancelled; nothing was changed (pass --yes to skip this question)")


@contextmanager
def engine_session(settings: Settings) -> Iterator[Engine]:
    """The engine adapter for ``settings``, closed when the command ends."""
    engine = connect(settings)
    try:
        yield engine
    finally:
        engine.close()


def vector_dimension(settings: Settings) -> int:
    """The vector dimension: from settings when given, else from the embedding model itself."""
    if settings.embedding.dimension is not None:
        return settings.embedding.dimension
    from esbridge.embeddings.factory import open_embedder

    with open_embedder(settings.embedding) as embedder:
        return embedder.dimension


def index_manager(settings: Settings, engine: Engine, *, dimension: int | None = None) -> IndexManager:
    return IndexManager(engine, settings.index, parameters_from(settings, dimension))
