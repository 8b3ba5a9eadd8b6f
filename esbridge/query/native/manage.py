"""Installing, showing and deleting the OpenSearch search pipeline that matches esbridge's settings.

Searches do not depend on it: esbridge sends its pipeline inside each native request (a temporary
pipeline). The installed one is for other clients (dashboards, ``GET idx/_search?search_pipeline=``)
and for review; ``apply`` is idempotent and reports what it changed as a diff.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import Engine, SearchPipelineStore
from esbridge.engines.capabilities import Capabilities
from esbridge.query.native import opensearch
from esbridge.query.native import plan as native
from esbridge.query.native.fusion import native_fusion

Action = Literal["created", "updated", "unchanged", "deleted", "absent", "would create", "would update"]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


@dataclass(frozen=True)
class PipelineState:
    """A pipeline as esbridge wants it and as the engine has it."""

    name: str
    desired: dict[str, Any]
    installed: dict[str, Any] | None
    diff: list[str] = field(default_factory=list)

    @property
    def in_sync(self) -> bool:
        return self.installed is not None and not self.diff


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise errors.ConfigError(f"pipeline name {name!r}: use letters, digits, '.', '_' or '-' (at most 255)")
    return name


def require_pipelines(capabilities: Capabilities) -> None:
    """Raise ``UnsupportedFeature`` saying why, when this engine cannot run esbridge's search pipelines
    (whatever the fusion settings): it is not OpenSearch, or it has no neural-search plugin."""
    _require_opensearch(capabilities)
    if not capabilities.native_hybrid.get("hybrid_query"):
        raise errors.UnsupportedFeature(
            "the node has no hybrid query (the neural-search plugin is not installed), so it cannot run "
            "esbridge's search pipelines",
            url=capabilities.url,
            operation="search pipeline",
        )


def desired_pipeline(pipeline: PipelineSettings, capabilities: Capabilities) -> dict[str, Any]:
    """The search pipeline of the configured fusion, or an error saying why this engine cannot have one.

    What the engine lacks is said before what the fusion settings cannot express (the default, qpp, has
    no server-side form), since no setting helps a node without neural-search.
    """
    require_pipelines(capabilities)
    fusion = native_fusion(pipeline.fusion, pipeline.weights, pipeline.fusion_params, pipeline.retrievers)
    outcome = native.plan(capabilities, fusion)
    if isinstance(outcome, str):
        raise errors.UnsupportedFeature(
            f"{outcome}; searches are fused by esbridge instead", url=capabilities.url, operation="search pipeline"
        )
    return opensearch.search_pipeline(fusion, outcome.features, explain=True)


def _require_opensearch(capabilities: Capabilities) -> None:
    if capabilities.distribution != "opensearch":
        raise errors.UnsupportedFeature(
            f"{capabilities.distribution} has no search pipelines: "
            + (
                "Elasticsearch fuses with rrf/linear retrievers inside each request, so there is nothing to install"
                if capabilities.distribution == "elasticsearch"
                else "searches on it are fused by esbridge"
            ),
            url=capabilities.url,
            operation="search pipeline",
        )


def state(engine: Engine, name: str, desired: dict[str, Any]) -> PipelineState:
    store = _store(engine)
    installed = store.get_search_pipeline(check_name(name))
    return PipelineState(name, desired, installed, [] if installed is None else diff(installed, desired))


def apply(engine: Engine, name: str, desired: dict[str, Any], *, dry_run: bool = False) -> tuple[Action, PipelineState]:
    """Install ``desired`` as ``name`` unless the engine already has exactly that."""
    current = state(engine, name, desired)
    if current.in_sync:
        return "unchanged", current
    if dry_run:
        return ("would create" if current.installed is None else "would update"), current
    _store(engine).put_search_pipeline(name, desired)
    return ("created" if current.installed is None else "updated"), current


def delete(engine: Engine, name: str) -> Action:
    return "deleted" if _store(engine).delete_search_pipeline(check_name(name)) else "absent"


def diff(installed: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """Unified diff lines from the installed definition to the desired one (empty when equal)."""
    if _canonical(installed) == _canonical(desired):
        return []
    before = json.dumps(_canonical(installed), indent=2, sort_keys=True).splitlines()
    after = json.dumps(_canonical(desired), indent=2, sort_keys=True).splitlines()
    return list(difflib.unified_diff(before, after, "installed", "esbridge settings", lineterm=""))


def _canonical(value: Any) -> Any:
    """Numbers compared as floats: the engine may echo 60 as 60 and 0.5 as 0.5 or 0.50."""
    if isinstance(value, Mapping):
        return {key: _canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _store(engine: Engine) -> SearchPipelineStore:
    if not isinstance(engine, SearchPipelineStore):
        raise errors.UnsupportedFeature(
            "this engine has no search pipelines", url=engine.url, operation="search pipeline"
        )
    return engine
