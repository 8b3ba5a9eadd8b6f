"""Options shared by commands, and turning them into settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from esbridge.config.settings import Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])


def engine_options(command: F) -> F:
    """``--url``, ``--engine`` and ``--config``: which engine to talk to, overriding other settings."""
    command = click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Settings file (default: $ESBRIDGE_CONFIG, else ./esbridge.toml if present).",
    )(command)
    command = click.option(
        "--engine",
        type=click.Choice(["auto", "opensearch", "elasticsearch", "embedded"]),
        help="Engine kind (default: auto, detected from the server).",
    )(command)
    return click.option("--url", help="Engine URL, e.g. http://127.0.0.1:9200 (overrides ESBRIDGE_URL).")(command)


def index_option(command: F) -> F:
    return click.option("--index", help="Index alias to use (overrides ESBRIDGE_INDEX).")(command)


def settings_from(config_file: Path | None = None, **flags: Any) -> Settings:
    """Settings from every source, with the command-line flags given taking precedence."""
    return load_settings(config_file, **flags)
