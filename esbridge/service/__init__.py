"""The HTTP sidecar (``esbridge serve``) and the MCP server (``esbridge mcp``); needs ``esbridge[service]``."""

from __future__ import annotations

import importlib.util

from esbridge.errors import DependencyMissing

# import name -> distribution name
HTTP_DEPENDENCIES = {"fastapi": "fastapi", "uvicorn": "uvicorn", "prometheus_client": "prometheus-client"}
MCP_DEPENDENCIES = {"mcp": "mcp"}


def require(dependencies: dict[str, str], purpose: str) -> None:
    """Raise ``DependencyMissing`` naming the ``service`` extra unless every dependency is importable."""
    for module, package in dependencies.items():
        if importlib.util.find_spec(module) is None:
            raise DependencyMissing(package, "service", purpose)
