"""Choosing and building the engine adapter that settings describe."""

from __future__ import annotations

from typing import Literal

from esbridge.config.settings import Settings
from esbridge.engines.base import AsyncEngine, Engine, Prepares

Resolved = Literal["opensearch", "elasticsearch", "embedded"]


def resolve_kind(settings: Settings) -> Resolved:
    """The engine kind, asking the server at ``settings.url`` who it is when the kind is ``auto``."""
    if settings.engine != "auto":
        return settings.engine
    if settings.auth.cloud_id:
        return "elasticsearch"
    if settings.url is None:
        return "embedded"
    if settings.auth.aws_sigv4:
        return "opensearch"
    return detect(settings)


def detect(settings: Settings) -> Literal["opensearch", "elasticsearch"]:
    """Ask ``GET /`` which distribution answers: OpenSearch says so in ``version.distribution``."""
    from opensearchpy import JSONSerializer, OpenSearch
    from opensearchpy.exceptions import OpenSearchException

    from esbridge.engines.cut_answers import CheckedUrllib3Connection
    from esbridge.engines.errors import no_answer
    from esbridge.engines.opensearch import client_options, translate
    from esbridge.engines.responses import root_info

    without_key = settings.auth.model_copy(update={"api_key": None})
    options = client_options(settings.model_copy(update={"auth": without_key}))
    if settings.auth.api_key is not None:
        options["headers"] = {"Authorization": f"ApiKey {settings.auth.api_key.get_secret_value()}"}
    # Elasticsearch may answer in its vendor media type, which opensearch-py does not know.
    options["serializers"] = {_ELASTIC_JSON: JSONSerializer()}
    client = OpenSearch(**options, connection_class=CheckedUrllib3Connection)
    try:
        answer = client.info()
    except OpenSearchException as exc:
        # Every OpenSearch answers GET /; Elasticsearch builds without the rest-root module say 405.
        if getattr(exc, "status_code", None) == 405:
            return "elasticsearch"
        timeout = no_answer(settings.timeout_s, settings.retries)
        raise translate(exc, url=settings.display_url, operation="detect engine", index=None, timeout=timeout) from exc
    finally:
        client.close()
    info = root_info(answer, url=settings.display_url, operation="detect engine")
    distribution = str(info["version"].get("distribution", "")).lower()
    return "opensearch" if distribution == "opensearch" else "elasticsearch"


_ELASTIC_JSON = "application/vnd.elasticsearch+json"


def connect(settings: Settings) -> Engine:
    """The synchronous engine adapter for ``settings``."""
    kind = resolve_kind(settings)
    if kind == "opensearch":
        from esbridge.engines.opensearch import OpenSearchEngine

        return OpenSearchEngine(settings)
    if kind == "elasticsearch":
        from esbridge.engines.elasticsearch import ElasticsearchEngine

        return ElasticsearchEngine(settings)
    from esbridge.engines.embedded import EmbeddedEngine

    return EmbeddedEngine.from_settings(settings)


def connect_async(settings: Settings, kind: Resolved | None = None) -> AsyncEngine:
    """The asynchronous query-path adapter for ``settings`` (``kind`` skips detection when known)."""
    kind = kind or resolve_kind(settings)
    if kind == "opensearch":
        from esbridge.engines.opensearch import AsyncOpenSearchEngine

        return AsyncOpenSearchEngine(settings)
    if kind == "elasticsearch":
        from esbridge.engines.elasticsearch import AsyncElasticsearchEngine

        return AsyncElasticsearchEngine(settings)
    from esbridge.engines.embedded import AsyncEmbeddedEngine

    return AsyncEmbeddedEngine.from_settings(settings)


async def prepare(engine: AsyncEngine, index: str) -> None:
    """For a one-shot caller: wait until ``index`` answers at once where the engine may need time for it (the
    embedded engine building a structure whole), so that the searches that follow, under deadlines, do not fail."""
    if isinstance(engine, Prepares):
        await engine.prepare(index)
