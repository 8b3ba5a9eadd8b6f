"""``esbridge serve``: the HTTP sidecar for application backends (docs/service.md)."""

from __future__ import annotations

from pathlib import Path

import click

from esbridge.cli.options import engine_options, index_option, settings_from


@click.command(name="serve")
@click.option("--host", help="Listen address (default: service.host, 127.0.0.1). 0.0.0.0 exposes it to the network.")
@click.option("--port", type=click.IntRange(0, 65535), help="Listen port (default: service.port, 8088).")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@engine_options
@index_option
def serve_command(
    host: str | None,
    port: int | None,
    log_level: str,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
) -> None:
    """Serve search and document writes over HTTP (POST /v1/search, /v1/documents, /metrics, ...)."""
    from esbridge.service import HTTP_DEPENDENCIES, require

    require(HTTP_DEPENDENCIES, "esbridge serve")
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    flags = {name: value for name, value in (("host", host), ("port", port)) if value is not None}
    if flags:
        settings = settings.model_copy(update={"service": settings.service.model_copy(update=flags)})
    from esbridge.service.app import check_address, serve

    check_address(settings.service.host, settings.service.port)
    serve(settings, log_level=log_level)
