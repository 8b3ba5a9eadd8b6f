"""``esbridge demo``: ingest the bundled vault and show a few hybrid searches, explained."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path

import click

from esbridge.cli.options import (
    check_top_n,
    engine_options,
    engine_session,
    index_manager,
    settings_from,
    top_n_option,
)
from esbridge.cli.progress import progress_for
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.ids import doc_id_of
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.query.api import open_query_embedder, searcher
from esbridge.query.models import SearchHit, SearchRequest, SearchResponse

DEMO_INDEX = "esbridge-demo"


def demo_files() -> tuple[Path, list[str]]:
    root = Path(str(resources.files("esbridge.demo")))
    queries = [line.strip() for line in (root / "queries.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    return root / "vault", queries


@click.command(name="demo")
@engine_options
@click.option("--index", default=DEMO_INDEX, show_default=True, help="Index alias the demo uses.")
@top_n_option(default=5, what="results per query")
def demo_command(url: str | None, engine: str | None, config_file: Path | None, index: str, top_n: int) -> None:
    """Load a small bundled vault (home solar) and run hybrid searches on it, with explanations.

    With no engine configured this runs on the embedded engine; with --url, on that cluster.
    """
    settings = settings_from(config_file, url=url, engine=engine, index=index)
    top_n = check_top_n(top_n, settings)
    vault, queries = demo_files()
    embedder, problem = open_query_embedder(settings)
    if problem:
        click.echo(f"warning: {problem}; searching with BM25 only", err=True)
    try:
        with engine_session(settings) as adapter:
            click.echo(f"engine: {adapter.probe().distribution} ({adapter.url}), index {settings.index}")
            report = ingest(
                vault,
                engine=adapter,
                manager=index_manager(settings, adapter, dimension=embedder.dimension if embedder else None),
                embedder=embedder,
                options=IngestOptions(source="esbridge-demo"),
                progress=progress_for(False),
            )
        click.echo(
            f"vault: {report.documents_indexed} notes indexed, {report.unchanged} chunks unchanged, "
            f"{len(report.failed)} failed\n"
        )
        for response in asyncio.run(_search_all(settings, embedder, queries, top_n)):
            click.echo(render(response))
    finally:
        if embedder is not None:
            embedder.close()


async def _search_all(
    settings: Settings, embedder: Embedder | None, queries: list[str], top_n: int
) -> list[SearchResponse]:
    async with searcher(settings, embedder) as hybrid:
        return [
            await hybrid.search(SearchRequest(query=query, top_n=top_n, explain=True, graph=True, collapse=True))
            for query in queries
        ]


def render(response: SearchResponse) -> str:
    """One query's results as a table with the explain columns."""
    lines = [f'"{response.query}"  ({response.search_mode}, {response.took_ms:.0f} ms)']
    lines.extend(f"  warning: {warning}" for warning in response.warnings)
    header = f"  {'#':>2}  {'score':>5}  {'title':<38} {'found by':<22} {'neighbour of':<18} {'recency':>7}"
    lines.extend([header, "  " + "-" * (len(header) - 2)])
    for rank, hit in enumerate(response.results, start=1):
        lines.append(f"  {rank:>2}  {hit.score:>5.3f}  {_cut(hit.title or hit.doc_id, 38):<38} {_found_by(hit):<22} "
                     f"{_cut(', '.join(_neighbour_of(hit)), 18):<18} {_recency(hit):>7}")  # fmt: skip
    return "\n".join(lines) + "\n"


def _found_by(hit: SearchHit) -> str:
    if hit.explain is None or not hit.explain.retrievers:
        return "link"
    return ", ".join(f"{name} #{found.rank}" for name, found in hit.explain.retrievers.items())


def _neighbour_of(hit: SearchHit) -> list[str]:
    return [doc_id_of(item) for item in hit.explain.neighbour_of] if hit.explain else []


def _recency(hit: SearchHit) -> str:
    if hit.explain is None:
        return ""
    if hit.explain.recency_multiplier == 1:
        return "-"  # none applied: recency off, no date, or fused to 0 (which no multiplier changes)
    return f"x{hit.explain.recency_multiplier:g}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
