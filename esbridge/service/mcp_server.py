"""``esbridge mcp``: the search pipeline as MCP tools for LLM agents, over stdio (the official ``mcp`` SDK).

Tools:

- ``search``: the parameters of ``SearchRequest`` (the HTTP service's and the CLI's), answering the
  ``SearchResponse`` as structured JSON (its output schema);
- ``index_status``: the engine, the index behind the alias, its chunk count, the model in use and the model
  the index records as having made its vectors (``IndexStatus``, its output schema).

The server holds one ``Backend`` (engine clients, searcher, embedding model loaded once) for the
session. Errors, unknown arguments and arguments that fail validation reach the agent as tool errors with
a one-line message, never a traceback.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal

import anyio
import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from mcp.types import Tool as MCPTool
from pydantic import Field, StrictBool, StrictFloat, StrictInt, ValidationError

from esbridge import __version__
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.engines.call_deadline import DeadlinePassed, engine_calls_until
from esbridge.errors import EsbridgeError
from esbridge.query.deadline import within
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from esbridge.service.backend import Backend, opened
from esbridge.service.limits import answer_time_s
from esbridge.service.models import IndexStatus
from esbridge.text import some_of

_log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Hybrid (keyword + semantic) search over an esbridge index. Call `search` with a natural-language "
    "query or an identifier; results are ranked with scores in [0, 1] (best = 1). `index_status` says "
    "what the index holds."
)


class _StrictArguments(MCPServer):
    """Refuses arguments a tool does not take (the SDK ignores them; the HTTP API refuses them), and reports
    arguments that fail the SDK's validation in one line instead of pydantic's multi-line dump."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parameters: dict[str, set[str]] = {}
        self._bounds: dict[str, dict[str, dict[str, Any]]] = {}

    def strict_tool(
        self, description: str, bounds: dict[str, dict[str, Any]] | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``bounds``: schema keywords for parameters whose limits come from the settings (the SDK builds the
        schema from annotations, which cannot read them)."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._parameters[fn.__name__] = set(inspect.signature(fn).parameters)
            self._bounds[fn.__name__] = bounds or {}
            return self.tool(description=description)(fn)

        return register

    async def list_tools(self) -> list[MCPTool]:
        """The tools, their input schemas closed (``additionalProperties: false``) as ``call_tool`` enforces, with
        the bounds the settings set."""
        return [
            self._as_enforced(tool) if tool.name in self._parameters else tool for tool in await super().list_tools()
        ]

    def _as_enforced(self, tool: MCPTool) -> MCPTool:
        bounds = self._bounds[tool.name]
        properties = {
            name: {**schema, **bounds.get(name, {})} for name, schema in tool.input_schema.get("properties", {}).items()
        }
        schema = {**tool.input_schema, "properties": properties, "additionalProperties": False}
        return tool.model_copy(update={"input_schema": schema})

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        known = self._parameters.get(name)
        unknown = sorted(set(arguments) - known) if known is not None else []
        if unknown:
            accepted = ", ".join(sorted(known or ())) or "none"
            raise ToolError(
                f"Error executing tool {name}: unknown argument(s): {some_of(unknown)} (accepted: {accepted})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {_one_line(exc.__cause__)}") from exc.__cause__


def _one_line(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "invalid arguments: " + "; ".join(problems)


@contextmanager
def _reported(tool: str) -> Iterator[None]:
    """Failures as tool errors with their one-line cause. The SDK would answer an unexpected exception with
    only "Error executing tool", and let a native library's panic (pyo3's PanicException is a BaseException)
    end the whole session without an answer."""
    try:
        yield
    except EsbridgeError as exc:
        raise ToolError(str(exc)) from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError, DeadlinePassed):
        raise
    except BaseException as exc:
        _log.error("%s failed unexpectedly", tool, exc_info=exc)  # the traceback goes to stderr, not the agent
        raise ToolError(f"unexpected failure: {type(exc).__name__}: {_first_line(exc)}") from None


@asynccontextmanager
async def _in_time(settings: Settings) -> AsyncIterator[float]:
    """A tool's whole call, connecting included, within ``service.request_timeout_s`` (the sidecar's time for a
    request): the engine client alone would wait ``timeout_s`` for each of ``retries + 1`` attempts (40 s by default)
    on an engine that never answers. Yields the deadline (``time.monotonic`` seconds)."""
    timeout_s = settings.service.request_timeout_s
    began = time.monotonic()
    try:
        async with within(timeout_s):
            yield began + timeout_s
    except (asyncio.TimeoutError, TimeoutError, DeadlinePassed):
        raise ToolError(
            f"the engine at {settings.display_url} did not answer within {timeout_s:g} s "
            f"(service.request_timeout_s; gave up after {time.monotonic() - began:.1f} s)"
        ) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else "(no message)"


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

    server = _StrictArguments(name="esbridge", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)

    # The SDK evaluates these annotations in module scope, so they cannot refer to ``settings``: the
    # upper bound of top_n (pipeline.top_n_max) is enforced by the searcher and listed through ``bounds``.
    # The default may not exceed that bound, or a search that leaves top_n out would be refused.
    default_top_n = min(SearchRequest.model_fields["top_n"].default, settings.pipeline.top_n_max)

    @server.strict_tool(
        description="Hybrid BM25 + kNN search of the index, fused; returns ranked results.",
        bounds={"top_n": {"maximum": settings.pipeline.top_n_max}},
    )
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=4096, description="what to look for")],
        top_n: Annotated[StrictInt, Field(ge=1, description="how many results")] = default_top_n,
        fusion: Annotated[str | None, Field(description="qpp (the default), rrf, linear, dbsf or adaptive")] = None,
        weights: Annotated[
            dict[str, StrictFloat] | None, Field(description="retriever -> weight, e.g. bm25, knn")
        ] = None,
        filters: Annotated[
            Filters | None, Field(description="term filters, date ranges, lifecycle; null: none")
        ] = None,
        explain: Annotated[StrictBool, Field(description="say how each result was found and scored")] = False,
        collapse: Annotated[StrictBool | None, Field(description="best chunk of each document only")] = None,
        graph: Annotated[StrictBool | None, Field(description="add documents linked with the top results")] = None,
        recency: Annotated[StrictBool | None, Field(description="boost recently modified documents")] = None,
        rerank: Annotated[StrictBool | None, Field(description="re-rank with the cross-encoder")] = None,
        mode: Literal["auto", "native", "client"] | None = None,
        group: Annotated[
            StrictBool, Field(description="also group: servers with their matching tools, agents, skills, tools")
        ] = False,
        category: Annotated[
            str | None, Field(description="search only this category; an unknown one is an error naming the valid")
        ] = None,
    ) -> Annotated[CallToolResult, SearchResponse]:
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
                category=category,
                group=group,
            )
        except ValidationError as exc:
            raise ToolError(_one_line(exc)) from None
        backend = holder["backend"]
        async with _in_time(settings) as deadline:
            with _reported("search"):
                connected = await backend.connected()
                backend.check_data_dir(connected, "search")
                left = deadline - time.monotonic()
                response = await connected.searcher.search(
                    request, time_s=left - answer_time_s(settings.service.request_timeout_s)
                )
        # Null fields stay, as the HTTP API and ``esbridge search --json`` answer them.
        answer = response.model_dump(mode="json")
        text = pydantic_core.to_json(answer, indent=2).decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)

    @server.strict_tool(description="The engine, the index behind the alias, how many chunks it holds, the model.")
    async def index_status() -> IndexStatus:
        backend = holder["backend"]
        async with _in_time(settings) as deadline:
            with _reported("index_status"):
                connected = await backend.connected()
                backend.check_data_dir(connected, "index status")
                status = await asyncio.to_thread(_until, deadline, backend.index_status, connected.engine)
        return status

    return server


def _until(deadline: float, status: Callable[[Any], IndexStatus], engine: Any) -> IndexStatus:
    """``status(engine)`` whose engine calls end by ``deadline``, so that its thread does not outlive the tool's
    answer by the engine client's retries."""
    with engine_calls_until(lambda: deadline):
        return status(engine)


def run_stdio(settings: Settings, *, log_level: str = "warning") -> None:
    from esbridge.service.mcp_logging import configure
    from esbridge.service.mcp_stdio import serve_stdio

    server = build_server(settings)
    configure(log_level)  # after the SDK set up its own logging, which this replaces
    anyio.run(serve_stdio, server)
