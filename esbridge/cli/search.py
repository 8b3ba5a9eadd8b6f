"""``esbridge search "query"``: hybrid search from the command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
from pydantic import ValidationError

from esbridge.cli.options import check_top_n, engine_options, index_option, settings_from, top_n_option
from esbridge.config.pipeline import FusionMode
from esbridge.config.settings import Settings
from esbridge.embeddings.base import embeddings_running
from esbridge.errors import ConfigError
from esbridge.query.api import open_query_embedder, search
from esbridge.query.grouping import RegistryGroups
from esbridge.query.models import Explain, Filters, SearchRequest, SearchResponse
from esbridge.query.planning import weights_for
from esbridge.query.query_vectors import NOT_EMBEDDED

_DATE_FILTERS = ("modified_after", "modified_before", "created_after", "created_before")
_SWITCHES = ("include_deprecated", "include_draft", "include_disabled")
# The spellings pydantic reads as a switch in a string; the request itself takes only true and false.
_SWITCH_VALUES = {
    **dict.fromkeys(("true", "t", "yes", "y", "on", "1"), True),
    **dict.fromkeys(("false", "f", "no", "n", "off", "0"), False),
}
_WEIGHTS = "'--weights'"
_FILTER = "'--filter'"
_REQUEST_OPTIONS = {
    "query": "'QUERY'",
    "top_n": "'--top-n'",
    "fusion": "'--fusion'",
    "weights": _WEIGHTS,
    "filters": _FILTER,
    "category": "'--category'",
}


@click.command(name="search")
@click.argument("query")
@top_n_option(default=10)
@click.option("--fusion", help="Fusion method: qpp (the default), rrf, linear, dbsf, adaptive, or a plugin's.")
@click.option("--weights", help="Retriever weights, e.g. bm25=1,knn=0.5.")
@click.option(
    "--filter", "filters", multiple=True, help="key=value (repeat a key for any-of); also modified_after=DATE etc."
)
@click.option("--graph/--no-graph", default=None, help="Add documents linked with the top results.")
@click.option("--recency/--no-recency", default=None, help="Boost recently modified documents.")
@click.option("--collapse/--no-collapse", default=None, help="Best chunk per document only.")
@click.option(
    "--mode",
    type=click.Choice(["auto", "native", "client"]),
    help="Where fusion runs: on the engine when it can (auto), on the engine (native), or in esbridge (client).",
)
@click.option("--group", is_flag=True, help="Also group as a registry: servers with their matching tools, agents, ...")
@click.option("--category", help="Search only this category of [routing] (default: routed by the query's keywords).")
@click.option("--explain", is_flag=True, help="Say how each result was found and scored.")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@click.option(
    "--allow-model-mismatch",
    is_flag=True,
    default=None,
    help="Search even if another model made the index's vectors; the answer warns (search.allow_model_mismatch).",
)
@engine_options
@index_option
def search_command(
    query: str,
    top_n: int,
    fusion: str | None,
    weights: str | None,
    filters: tuple[str, ...],
    graph: bool | None,
    recency: bool | None,
    collapse: bool | None,
    mode: FusionMode | None,
    group: bool,
    category: str | None,
    explain: bool,
    as_json: bool,
    allow_model_mismatch: bool | None,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
) -> None:
    """Search the index with BM25 and kNN together, fused."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    if allow_model_mismatch:
        allowed = settings.search.model_copy(update={"allow_model_mismatch": True})
        settings = settings.model_copy(update={"search": allowed})
    top_n = check_top_n(top_n, settings)
    check_choices(fusion, category, settings)
    try:
        request = SearchRequest(
            query=query,
            top_n=top_n,
            fusion=fusion,
            weights=parse_weights(weights) if weights else None,
            filters=parse_filters(filters),
            explain=explain,
            graph=graph,
            recency=recency,
            collapse=collapse,
            mode=mode,
            category=category,
            group=group,
        )
    except ValidationError as exc:
        raise click.BadParameter(_first_error(exc), param_hint=_option_of(exc)) from exc
    try:
        weights_for(request, settings.pipeline)  # a name that is no retriever, or every weight 0
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=_WEIGHTS) from exc
    embedder, problem = open_query_embedder(settings)
    try:
        response = search(settings, request, embedder, model_problem=problem)
    finally:
        if embedder is not None:
            embedder.close()
    if as_json:
        click.echo(json.dumps(response.model_dump(mode="json"), indent=2))
    else:
        click.echo(render(response, explain))
    if embedder is not None and (hung := hung_model(response, embedder.name)):
        raise click.ClickException(hung)


def hung_model(response: SearchResponse, model: str) -> str | None:
    """Why the answer is lexical-only when the model's call for the query's vector was given up on for time and
    has still not returned: the process exits without it (its thread does not hold the exit), reporting it."""
    given_up = next((warning for warning in response.warnings if warning.startswith(NOT_EMBEDDED)), None)
    if given_up is None or not embeddings_running():
        return None
    return (
        f"the embedding model {model} hung: {given_up} (pipeline.embed_timeout_s) and its call has still not "
        "returned; the answer above is lexical-only"
    )


def check_choices(fusion: str | None, category: str | None, settings: Settings) -> None:
    """Refuse, before any work, a ``--fusion`` no installed method has and a ``--category`` [routing] lacks."""
    from esbridge.query.fusion.registry import FUSION_METHODS

    if fusion is not None and fusion not in FUSION_METHODS:  # a plugin that fails to load raises here, naming it
        try:
            FUSION_METHODS.get_named(fusion)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="'--fusion'") from exc
    if category is not None and category not in settings.routing:
        known = ", ".join(sorted(settings.routing)) or "none are configured ([routing] in the settings)"
        raise click.BadParameter(f"unknown category {category!r}; categories: {known}", param_hint="'--category'")


def parse_weights(text: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"weights look like bm25=1,knn=0.5; got {part!r}", param_hint=_WEIGHTS)
        if not math.isfinite(weights[name.strip()]) or weights[name.strip()] < 0:
            raise click.BadParameter(f"a weight is a finite number >= 0; got {part!r}", param_hint=_WEIGHTS)
    return weights


def parse_filters(items: tuple[str, ...]) -> Filters:
    terms: dict[str, list[str]] = {}
    options: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value:
            raise click.BadParameter(f"filters look like key=value; got {item!r}", param_hint=_FILTER)
        if key in _DATE_FILTERS:
            options[key] = value
        elif key in _SWITCHES:
            switch = _SWITCH_VALUES.get(value.strip().lower())
            if switch is None:
                raise click.BadParameter(
                    f"{key}: give true or false (yes/no, on/off, 1/0); got {value!r}", param_hint=_FILTER
                )
            options[key] = switch
        else:
            terms.setdefault(key, []).append(value)
    try:
        return Filters(terms=terms, **options)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise click.BadParameter(_first_error(exc), param_hint=_FILTER) from exc


def _option_of(exc: ValidationError) -> str | None:
    """The option a refused request field came from, for click's ``Invalid value for '--option'``."""
    field = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else ""
    return _REQUEST_OPTIONS.get(field)


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message  # a check across fields names no one field


def render(response: SearchResponse, explain: bool) -> str:
    lines = [f"{response.search_mode}, {len(response.results)} results in {response.took_ms:.0f} ms"]
    lines.extend(f"warning: {warning}" for warning in response.warnings)
    if (routed := response.details.routing) is not None and routed.category is not None:
        lines.append(f"category: {routed.category} ({routed.reason})")
    if explain:
        lines.extend(f"off: {feature} ({reason})" for feature, reason in response.details.off.items())
        searched = {
            name: found.fields
            for hit in response.results
            if hit.explain is not None
            for name, found in hit.explain.retrievers.items()
        }
        if searched:
            lines.append("fields: " + "; ".join(f"{name} {', '.join(fields)}" for name, fields in searched.items()))
    for rank, hit in enumerate(response.results, start=1):
        label = hit.title or hit.doc_id
        lines.append(f"{rank:>3}. {hit.score:.3f}  {label}  [{hit.id}]")
        if explain and hit.explain is not None:
            lines.append(f"       {'; '.join(_how_scored(hit.explain))}")
    if response.groups is not None:
        lines.extend(render_groups(response.groups))
    return "\n".join(lines)


def _how_scored(explain: Explain) -> list[str]:
    """How a result entered the list, then the stages that changed its score: the recency multiplier only where
    one applied (1 is recency off, no date, or a fused score of 0, which no multiplier changes)."""
    parts = [_how(explain)]
    if explain.recency_multiplier != 1:
        parts.append(f"recency x{explain.recency_multiplier:g}")
    if (terms := explain.reranking) is not None:
        parts.append(f"re-ranked from {terms.score_before:.3f} by re-ranker {terms.reranker_score:.3f}")
    if (scaled := _scaled(explain)) is not None:
        parts.append(scaled)
    return parts


def _scaled(explain: Explain) -> str | None:
    """How the score became the one shown, where it is not simply this result's over the best one's."""
    scale, raw = explain.normalization, explain.unnormalized_score
    if scale is None or raw is None:
        return None
    if scale.low == scale.high:
        return f"every result scored {raw:.3f}: each shown as 1"
    if scale.low != 0:
        low, high = f"{scale.low:.3f}", f"{scale.high:.3f}"
        return f"no result scored above 0: {raw:.3f} placed between the lowest {low} and the best {high}"
    if raw < 0:
        return f"scored {raw:.3f}, below 0: shown as 0"
    return None


def _how(explain: Explain) -> str:
    """How a result entered the list: its retrievers, with what links added (graph re-scoring) and what
    lifting took off, or the results it neighbours (graph expansion)."""
    found = ", ".join(f"{name} #{r.rank} ({r.score:.3f})" for name, r in explain.retrievers.items())
    linked = ", ".join(explain.neighbour_of)
    if not found:
        hops = f" ({explain.hops} hops)" if explain.hops and explain.hops > 1 else ""
        return f"neighbour of {linked}{hops}"
    parts = [f"found by {found}"]
    if explain.link_lift:
        parts.append(f"lifted +{explain.link_lift:.3f} by links with {linked}")
    if explain.link_shift:  # graph lifting moved everything below the kept results down by this much
        parts.append(f"moved down {explain.link_shift:.3f} to stay below the kept results")
    return "; ".join(parts)


def render_groups(groups: RegistryGroups) -> list[str]:
    lines: list[str] = []
    for name in ("servers", "virtual_servers"):
        for server in getattr(groups, name):
            lines.append(
                f"{name[:-1].replace('_', ' ')}: {server.score:.3f}  {server.name or server.id}  {server.path or ''}"
            )
            lines.extend(f"    tool {tool.score:.3f}  {tool.tool_name}" for tool in server.matching_tools)
    for name in ("agents", "skills"):
        for hit in getattr(groups, name):
            agent = f"  (agent {hit.agent_name or hit.agent_id})" if hit.agent_id else ""
            lines.append(f"{name[:-1]}: {hit.score:.3f}  {hit.name or hit.id}{agent}")
    lines.extend(
        f"tool: {tool.score:.3f}  {tool.tool_name}  ({tool.server_path or tool.server_id})" for tool in groups.tools
    )
    return lines
