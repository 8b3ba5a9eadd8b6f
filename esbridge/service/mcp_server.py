"""``esbridge mcp``: the search pipeline as MCP tools for LLM agents, over stdio (the official ``mcp`` SDK).

Tools:

- ``search``: the parameters of ``SearchRequest`` (the HTTP service's and the CLI's), answering the
  ``SearchResponse`` as structured JSON;
- ``index_status``: the engine, the index behind the alias, its chunk count and the model in use.

The server holds one ``Backend`` (engine clients, searcher, embedding model loaded once) for the
session. Errors reach the agent as tool errors with esbridge's one-line message, never a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.errors import EsbridgeError
from esbridge.query.models import Filters, SearchRequest
from esbridge.service.backend import Backend, opened

INSTRUCTIONS = (
    "Hybrid (keyword + semantic) search over an esbridge index. Call `search` with a natural-language "
    "query or an identifier; results are ranked with scores in [0, 1] (best = 1). `index_status` says "
    "what the index holds."
)


def build_server(settings: Settings, *, embedder: Embedder | None = None, load_model: bool = True) -> MCPServer:
    holder: dict[str, Backend] = {}

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        async with opened(settings, embedder, load_model=load_model) as backend:
            holder["backend"] = backend
            try:
                yield
            finally:
                holder.pop("backend")

    server = MCPServer(name="esbridge", instructions=INSTRUCTIONS, lifespan=lifespan)

    # The SDK evaluates these annotations in module scope, so they cannot refer to ``settings``: the
    # upper bound of top_n (pipeline.top_n_max) is enforced by the searcher instead.
    @server.tool(description="Hybrid BM25 + kNN search of the index, fused; returns ranked results.")
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=4096, description="what to look for")],
        top_n: Annotated[int, Field(ge=1, description="how many results")] = 10,
        fusion: Annotated[str | None, Field(description="rrf, linear, dbsf or adaptive")] = None,
        weights: Annotated[dict[str, float] | None, Field(description="retriever -> weight, e.g. bm25, knn")] = None,
        filters: Annotated[Filters | None, Field(description="term filters, date ranges, lifecycle")] = None,
        explain: Annotated[bool, Field(description="say how each result was found and scored")] = False,
        collapse: Annotated[bool | None, Field(description="best chunk of each document only")] = None,
        graph: Annotated[bool | None, Field(description="add documents linked with the top results")] = None,
        recency: Annotated[bool | None, Field(description="boost recently modified documents")] = None,
        rerank: Annotated[bool | None, Field(description="re-rank with the cross-encoder")] = None,
        mode: Literal["auto", "native", "client"] | None = None,
    ) -> dict[str, Any]:
        try:
            request = SearchRequest(
                query=query,
                top_n=top_n,
                fusion=fusion,
                weights=weights,
                filters=filters or Filters(),
                explain=explain,
                collapse=collapse,
                graph=graph,
                recency=recency,
                rerank=rerank,
                mode=mode,
            )
        except ValidationError as exc:
            raise ToolError(f"invalid search: {exc.errors()[0]['msg']}") from None
        backend = holder["backend"]
        try:
            connected = await backend.connected()
            response = await connected.searcher.search(request)
        except EsbridgeError as exc:
            raise ToolError(str(exc)) from None
        if backend.model_problem:
            response.warnings.insert(0, backend.model_problem)
        answer: dict[str, Any] = response.model_dump(mode="json", exclude_none=True)
        return answer

    @server.tool(description="The engine, the index behind the alias, how many chunks it holds, the model.")
    async def index_status() -> dict[str, Any]:
        backend = holder["backend"]
        try:
            connected = await backend.connected()
            return await asyncio.to_thread(backend.index_status, connected.engine)
        except EsbridgeError as exc:
            raise ToolError(str(exc)) from None

    return server


def run_stdio(settings: Settings) -> None:
    build_server(settings).run("stdio")
