"""``esbridge mcp``: the search and index_status tools for LLM agents, over stdio (docs/service-api.md)."""

from __future__ import annotations

from pathlib import Path

import click

from esbridge.cli.options import engine_options, index_option, settings_from
from esbridge.cli.output import require_standard_output


@click.command(name="mcp")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="What reaches stderr, one line a record; debug adds tracebacks.",
)
@engine_options
@index_option
def mcp_command(
    log_level: str, url: str | None, engine: str | None, config_file: Path | None, index: str | None
) -> None:
    """Run an MCP server on stdin/stdout exposing `search` and `index_status`."""
    require_standard_output()
    from esbridge.service import MCP_DEPENDENCIES, require

    require(MCP_DEPENDENCIES, "esbridge mcp")
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    from esbridge.service.mcp_server import run_stdio

    run_stdio(settings, log_level=log_level)
