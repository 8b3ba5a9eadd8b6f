"""``esbridge graph stats|neighbors``: the link graph of the indexed documents."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
import networkx as nx

from esbridge.cli.options import engine_options, engine_session, index_option, settings_from
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap, canonical_source
from esbridge.engines import Engine
from esbridge.query.link_graph import LINK_FIELDS, build_graph, graph_stats, link_map, neighborhood


def _graph_of(engine: Engine, index: str, fields: FieldMap) -> tuple[nx.DiGraph, int]:
    """The graph of the index's documents, and how many links name a document it does not hold (one deleted
    after the documents linking to it were written, or never written)."""
    if fields is DEFAULT_FIELD_MAP:
        hits = engine.scan(index, {"match_all": {}}, list(LINK_FIELDS), sort_field="chunk_id")
        links = link_map(hit.source for hit in hits)
    else:
        # An attached index: its links are in the field its map names, its documents' ids in `id` (else `_id`).
        if fields.links is None:
            raise click.ClickException(f"{index} has no link graph: its field map names no links field")
        names = [name for name in (fields.id, fields.links) if name]
        hits = engine.scan(index, {"match_all": {}}, names, sort_field=fields.id or "_id")
        links = link_map(canonical_source(hit.source, fields, hit.id) for hit in hits)
    graph = build_graph(links)
    missing = [node for node in graph if node not in links]  # every document has chunks, so it is a key
    to_missing = sum(graph.in_degree(node) for node in missing)
    graph.remove_nodes_from(missing)
    return graph, to_missing


@click.group()
def graph() -> None:
    """Inspect the graph of links between indexed documents."""


@graph.command()
@engine_options
@index_option
@click.option(
    "--top", type=click.IntRange(min=0), default=10, show_default=True, help="How many top documents to list."
)
@click.option("--json", "as_json", is_flag=True)
def stats(
    url: str | None, engine: str | None, config_file: Path | None, index: str | None, top: int, as_json: bool
) -> None:
    """Nodes, edges, components, and the most linked documents (degree and PageRank)."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        graph, to_missing = _graph_of(adapter, settings.index, settings.field_map)
        result = graph_stats(graph, top=top)
    if as_json:
        click.echo(json.dumps({**dataclasses.asdict(result), "links_to_missing": to_missing}, indent=2))
        return
    missing = f" ({to_missing} links to documents not in the index)" if to_missing else ""
    click.echo(f"documents {result.nodes}, links {result.edges}{missing}, density {result.density:.5f}")
    click.echo(f"components {result.components} (largest {result.largest_component} documents)")
    click.echo("most linked (degree):   " + ", ".join(f"{doc} {n}" for doc, n in result.top_degree))
    click.echo("most central (PageRank): " + ", ".join(f"{doc} {p:.4f}" for doc, p in result.top_pagerank))


@graph.command()
@click.argument("doc_id")
@engine_options
@index_option
@click.option("--hops", type=click.IntRange(1, 3), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def neighbors(
    doc_id: str,
    url: str | None,
    engine: str | None,
    config_file: Path | None,
    index: str | None,
    hops: int,
    as_json: bool,
) -> None:
    """Documents DOC_ID links to, and documents linking to it, with their distance in hops."""
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    with engine_session(settings) as adapter:
        try:
            result = neighborhood(_graph_of(adapter, settings.index, settings.field_map)[0], doc_id, hops=hops)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(result), indent=2))
        return
    click.echo(f"{doc_id} links to:")
    click.echo("\n".join(f"  {hops_away}  {doc}" for doc, hops_away in result.outgoing.items()) or "  (nothing)")
    click.echo(f"linking to {doc_id}:")
    click.echo("\n".join(f"  {hops_away}  {doc}" for doc, hops_away in result.incoming.items()) or "  (nothing)")
