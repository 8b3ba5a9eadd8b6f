"""Elasticsearch adapter (elasticsearch-py 8.x, which serves 8.x and 9.x servers)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import elastic_transport
import elasticsearch
from elasticsearch import AsyncElasticsearch, Elasticsearch

from esbridge import errors
from esbridge.config.settings import Settings
from esbridge.engines import paging, responses
from esbridge.engines.analysis import analysis_probes
from esbridge.engines.base import BulkAction, BulkResult, Dialect, IndexInfo, SearchResult
from esbridge.engines.blocks import confirm_write_block
from esbridge.engines.capabilities import (
    ANALYSIS_MODULE,
    REINDEX_MODULE,
    RRF_MODULE,
    Capabilities,
    elasticsearch_has_knn,
    elasticsearch_native_hybrid,
    server_features,
)
from esbridge.engines.credentials import basic_auth_headers
from esbridge.engines.cut_answers import CheckedUrllib3Node
from esbridge.engines.errors import connection_reason, from_response, no_answer, tls_reason
from esbridge.engines.index_templates import ElasticsearchTemplates
from esbridge.engines.routing import SearchRouting
from esbridge.engines.server_reindex import ServerReindex


def with_port(url: str) -> str:
    """``url`` with the port opensearch-py would use when it names none (443 for https, 9200 otherwise):
    elasticsearch-py refuses a URL without a port with a bare ``ValueError``."""
    parts = urlsplit(url)
    if parts.port is not None or not parts.hostname:
        return url
    port = 443 if parts.scheme == "https" else 9200
    return urlunsplit(parts._replace(netloc=f"{parts.netloc}:{port}"))


def client_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for ``Elasticsearch``/``AsyncElasticsearch`` from esbridge settings."""
    auth = settings.auth
    if auth.aws_sigv4:
        raise errors.ConfigError("auth.aws_sigv4 is for Amazon OpenSearch Service, not Elasticsearch")
    options: dict[str, Any] = {
        "request_timeout": settings.timeout_s,
        "max_retries": settings.retries,
        "retry_on_timeout": True,
    }
    if auth.cloud_id:
        options["cloud_id"] = auth.cloud_id
    elif settings.url:
        options["hosts"] = [with_port(settings.url)]
    else:
        raise errors.ConfigError("the Elasticsearch adapter needs an engine URL or auth.cloud_id")
    if auth.cloud_id or urlsplit(settings.url or "").scheme == "https":  # urlsplit lowercases: HTTPS:// too
        options["verify_certs"] = settings.tls.verify
        for name in ("ca_certs", "client_cert", "client_key"):
            path = getattr(settings.tls, name)
            if path is not None:
                options[name] = str(path)
    if auth.username is not None:
        password = auth.password.get_secret_value() if auth.password else ""
        options["headers"] = basic_auth_headers(auth.username, password)
    elif auth.api_key is not None:
        options["api_key"] = auth.api_key.get_secret_value()
    return options


def translate(
    exc: Exception, *, url: str, operation: str, index: str | None, timeout: str = "no answer in time"
) -> errors.EngineError:
    """The esbridge error for an elasticsearch-py / elastic-transport exception."""
    # OpenSearch refuses the client's media type (HTTP 406) before the client can check which server answered.
    refused_media = isinstance(exc, elasticsearch.ApiError) and exc.meta.status == 406 and "vnd.elastic" in str(exc)
    if isinstance(exc, elasticsearch.UnsupportedProductError) or refused_media:
        return errors.EngineResponseError(
            "the server does not identify as Elasticsearch (is it OpenSearch? set engine = 'opensearch')",
            url=url,
            operation=operation,
            index=index,
        )
    if isinstance(exc, elasticsearch.ApiError):
        return from_response(exc.meta.status, exc.body, url=url, operation=operation, index=index)
    if isinstance(exc, elastic_transport.ConnectionTimeout):
        return errors.EngineTimeout(timeout, url=url, operation=operation, index=index)
    # ``message`` is the cause; str() names only the failed earlier attempts, so with no retries just "TLS error".
    if isinstance(exc, elastic_transport.TlsError):
        return errors.TLSError(tls_reason(exc.message or str(exc)), url=url, operation=operation, index=index)
    if isinstance(exc, elastic_transport.ConnectionError):
        reason = connection_reason(exc.message or str(exc))
        return errors.EngineUnavailable(f"cannot connect ({reason})", url=url, operation=operation, index=index)
    return errors.EngineResponseError(f"{type(exc).__name__}: {exc}", url=url, operation=operation, index=index)


_MODULE_NOTES = (
    (ANALYSIS_MODULE, "language analyzers or custom analysis (esbridge's mapping needs them)"),
    (REINDEX_MODULE, "server-side _reindex"),
    (RRF_MODULE, "rrf/linear retrievers"),
)

_CLIENT_ERRORS = (elasticsearch.ApiError, elastic_transport.TransportError, elasticsearch.SerializationError)


class _Translating:
    _url: str
    _timeout = "no answer in time"

    @contextmanager
    def _call(self, operation: str, index: str | None = None) -> Iterator[None]:
        try:
            yield
        except _CLIENT_ERRORS as exc:
            raise translate(exc, url=self._url, operation=operation, index=index, timeout=self._timeout) from exc


class ElasticsearchEngine(paging.ScanBySearch, _Translating, ServerReindex, ElasticsearchTemplates):
    """An Elasticsearch 8.x/9.x cluster reached through elasticsearch-py."""

    def __init__(self, settings: Settings, client: Elasticsearch | None = None) -> None:
        self._url = settings.display_url if settings.url else f"cloud:{settings.auth.cloud_id}"
        self._client = client or Elasticsearch(**client_options(settings), node_class=CheckedUrllib3Node)
        self._routing = SearchRouting(settings.search)
        self._timeout = no_answer(settings.timeout_s, settings.retries)
        self._reindex_stall_s = settings.reindex_stall_timeout_s

    @property
    def dialect(self) -> Dialect:
        return "elasticsearch"

    @property
    def url(self) -> str:
        return self._url

    def probe(self) -> Capabilities:
        with self._call("probe"):
            health = self._client.cluster.health().body
            nodes = self._client.nodes.info(node_id="_local", metric="plugins,settings").body
        node: dict[str, Any] = next(iter(nodes.get("nodes", {}).values()), {})
        version = str(node.get("version") or self._root_version())
        modules = {
            str(item.get("name")): str(item.get("version") or version)
            for item in [*node.get("modules", []), *node.get("plugins", [])]
        }
        notes: list[str] = []
        license_type, active = self._license(notes)
        native = elasticsearch_native_hybrid(version, license_type if active else None, modules)
        analysis_elsewhere = bool(modules) and ANALYSIS_MODULE not in modules and self._has_mapping_analysis()
        features = server_features(modules, text_analysis=True if analysis_elsewhere else None)
        if not native["rrf_retriever"] and license_type not in (None, "enterprise", "trial"):
            notes.append(f"licence {license_type!r}: rrf/linear retrievers need an enterprise or trial licence")
        notes.extend(
            f"module {module} absent: no {what}"
            for module, what in _MODULE_NOTES
            if modules and module not in modules and not (module == ANALYSIS_MODULE and analysis_elsewhere)
        )
        if analysis_elsewhere:
            notes.append(f"module {ANALYSIS_MODULE} absent, but a plugin provides the analysis esbridge's mapping uses")
        return Capabilities(
            distribution="elasticsearch",
            version=version,
            url=self._url,
            cluster_name=health.get("cluster_name"),
            health=health.get("status"),
            knn=elasticsearch_has_knn(version),
            plugins=dict(sorted(modules.items())),
            license=license_type,
            native_hybrid=native,
            features=features,
            notes=notes,
        )

    def _has_mapping_analysis(self) -> bool:
        """Whether the server can analyse text with every component of esbridge's full mapping."""
        try:
            for body in analysis_probes():
                with self._call("probe analysis"):
                    self._client.indices.analyze(**body)
        except (errors.RequestRejected, errors.AuthorizationError, errors.UnsupportedFeature):
            return False
        return True

    def _root_version(self) -> str:
        with self._call("probe"):
            return str(self._client.info().body["version"]["number"])

    def _license(self, notes: list[str]) -> tuple[str | None, bool]:
        """The licence type, and whether it is active (an expired licence keeps its type, not its features)."""
        try:
            with self._call("read licence"):
                answer = self._client.license.get().body
        except (errors.AuthorizationError, errors.RequestRejected, errors.UnsupportedFeature) as exc:
            notes.append(f"licence unknown ({exc.reason}); licensed features reported off")
            return None, False
        licence = answer.get("license", {})
        kind = str(licence.get("type", "")) or None
        status = str(licence.get("status") or "active").lower()
        active = status not in ("expired", "invalid")
        if kind is not None and not active:
            notes.append(f"licence {kind!r} is {status}: licensed features (rrf/linear retrievers) reported off")
        return kind, active

    def index_exists(self, index: str) -> bool:
        with self._call("check index", index):
            return bool(self._client.indices.exists(index=index))

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        with self._call("create index", index):
            self._client.indices.create(index=index, **dict(body))

    def delete_index(self, index: str, *, missing_ok: bool = False) -> bool:
        try:
            with self._call("delete index", index):
                self._client.indices.delete(index=index)
        except errors.IndexNotFound:
            if missing_ok:
                return False
            raise
        return True

    def refresh(self, index: str) -> None:
        with self._call("refresh", index):
            self._client.indices.refresh(index=index)

    def list_indices(self, pattern: str) -> list[IndexInfo]:
        with self._call("list indices", pattern):
            rows = self._client.cat.indices(
                index=pattern, format="json", bytes="b", expand_wildcards="open,closed"
            ).body
        return responses.index_infos(cast(list[dict[str, Any]], rows))

    def alias_targets(self, alias: str) -> list[str]:
        with self._call("read alias", alias):
            if not self._client.indices.exists_alias(name=alias):
                return []
            answer = self._client.indices.get_alias(name=alias).body
        return sorted(answer)

    def update_aliases(self, actions: Sequence[Mapping[str, Any]]) -> None:
        with self._call("update aliases"):
            self._client.indices.update_aliases(actions=[dict(action) for action in actions])

    def get_mapping(self, index: str) -> dict[str, Any]:
        with self._call("read mapping", index):
            answer = self._client.indices.get_mapping(index=index).body
        return responses.single_index_section(answer, "mappings", url=self._url, index=index)

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        with self._call("read mapping", index):
            answer = self._client.indices.get_mapping(index=index).body
        return {name: dict(content.get("mappings") or {}) for name, content in answer.items()}

    def get_index_settings(self, index: str) -> dict[str, Any]:
        with self._call("read settings", index):
            answer = self._client.indices.get_settings(index=index).body
        return dict(responses.single_index_section(answer, "settings", url=self._url, index=index)["index"])

    def put_mapping(self, index: str, properties: Mapping[str, Any]) -> None:
        with self._call("update mapping", index):
            self._client.indices.put_mapping(index=index, properties=dict(properties))

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        with self._call("update mapping _meta", index):
            self._client.indices.put_mapping(index=index, meta=dict(meta))

    def set_write_block(self, index: str, blocked: bool) -> None:
        if not blocked:
            with self._call("allow writes", index):
                self._client.indices.put_settings(index=index, settings={"index.blocks.write": False})
            return
        # The add-block API, unlike the setting, waits for the writes in flight to finish.
        with self._call("block writes", index):
            answer = self._client.indices.add_block(index=index, block="write").body
        confirm_write_block(answer, url=self._url, index=index)

    def count(self, index: str) -> int:
        with self._call("count", index):
            answer = self._client.count(index=index).body
        return responses.counted(answer, url=self._url, index=index)

    def _start_reindex(self, source: str, dest: str) -> str:
        task: str = self._client.reindex(
            source={"index": source}, dest={"index": dest}, wait_for_completion=False
        ).body["task"]
        return task

    def _reindex_tasks(self) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.list(actions="*reindex", detailed=True).body
        return answer

    def _task_status(self, task: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.get(task_id=task).body
        return answer

    def _cancel_and_wait(self, task: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.cancel(task_id=task, wait_for_completion=True).body
        return answer

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        if not actions:
            return BulkResult(succeeded=[], failed=[])
        with self._call("bulk write", index):
            return responses.sent_in_bulk(index, actions, lambda lines: self._client.bulk(operations=lines).body)

    def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        with self._call("search", index):
            routing = self._routing.params(body)
            answer = self._client.search(
                index=index,
                body=dict(body),
                search_type=routing.get("search_type"),
                preference=routing.get("preference"),
            ).body
        return responses.search_result(answer, url=self._url, index=index)

    def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        lines = responses.msearch_lines(index, bodies, header=self._routing.params)
        with self._call("msearch", index):
            answer = self._client.msearch(searches=lines).body
        return responses.msearch_results(answer, len(bodies), url=self._url, index=index)

    def close(self) -> None:
        self._client.close()


class AsyncElasticsearchEngine(_Translating):
    """The query path of an Elasticsearch cluster, for concurrent retrieval."""

    def __init__(self, settings: Settings, client: AsyncElasticsearch | None = None) -> None:
        self._url = settings.display_url if settings.url else f"cloud:{settings.auth.cloud_id}"
        self._client = client or AsyncElasticsearch(**client_options(settings))
        self._routing = SearchRouting(settings.search)
        self._timeout = no_answer(settings.timeout_s, settings.retries)

    @property
    def dialect(self) -> Dialect:
        return "elasticsearch"

    @property
    def url(self) -> str:
        return self._url

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        with self._call("search", index):
            routing = self._routing.params(body)
            answer = (
                await self._client.search(
                    index=index,
                    body=dict(body),
                    search_type=routing.get("search_type"),
                    preference=routing.get("preference"),
                )
            ).body
        return responses.search_result(answer, url=self._url, index=index)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        lines = responses.msearch_lines(index, bodies, header=self._routing.params)
        with self._call("msearch", index):
            answer = (await self._client.msearch(searches=lines)).body
        return responses.msearch_results(answer, len(bodies), url=self._url, index=index)

    async def close(self) -> None:
        await self._client.close()
