"""OpenSearch adapter (opensearch-py), synchronous and asynchronous. The client's options and the translation of
its errors are in ``esbridge.engines.opensearch_client``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from opensearchpy import AsyncOpenSearch, OpenSearch
from opensearchpy import exceptions as ox

from esbridge import errors
from esbridge.config.settings import Settings
from esbridge.engines import paging, responses
from esbridge.engines.base import BulkAction, BulkResult, Dialect, IndexInfo, SearchResult
from esbridge.engines.blocks import confirm_write_block
from esbridge.engines.capabilities import (
    ANALYSIS_MODULE,
    KNN_PLUGIN,
    NEURAL_SEARCH_PLUGIN,
    REINDEX_MODULE,
    Capabilities,
    opensearch_native_hybrid,
    server_features,
)
from esbridge.engines.cut_answers import CheckedUrllib3Connection
from esbridge.engines.errors import no_answer
from esbridge.engines.index_templates import OpenSearchTemplates
from esbridge.engines.opensearch_client import Translating, client_options, translate
from esbridge.engines.routing import SearchRouting
from esbridge.engines.server_reindex import ServerReindex

__all__ = ["AsyncOpenSearchEngine", "OpenSearchEngine", "client_options", "node_components", "translate"]

# Plugins and modules loaded from the classpath (as scripts/engines does) report their class name.
_PLUGIN_CLASSES = {
    "org.opensearch.knn.plugin.KNNPlugin": KNN_PLUGIN,
    "org.opensearch.neuralsearch.plugin.NeuralSearch": NEURAL_SEARCH_PLUGIN,
    "org.opensearch.analysis.common.CommonAnalysisModulePlugin": ANALYSIS_MODULE,
    "org.opensearch.index.reindex.ReindexModulePlugin": REINDEX_MODULE,
    # Their 2.x class names (OpenSearch 3 calls them ...ModulePlugin).
    "org.opensearch.analysis.common.CommonAnalysisPlugin": ANALYSIS_MODULE,
    "org.opensearch.index.reindex.ReindexPlugin": REINDEX_MODULE,
}


class OpenSearchEngine(paging.ScanBySearch, Translating, ServerReindex, OpenSearchTemplates):
    """An OpenSearch cluster reached through opensearch-py."""

    def __init__(self, settings: Settings, client: OpenSearch | None = None) -> None:
        self._url = settings.display_url
        self._client = client or OpenSearch(**client_options(settings), connection_class=CheckedUrllib3Connection)
        self._routing = SearchRouting(settings.search)
        self._timeout = no_answer(settings.timeout_s, settings.retries)
        self._reindex_stall_s = settings.reindex_stall_timeout_s

    @property
    def dialect(self) -> Dialect:
        return "opensearch"

    @property
    def url(self) -> str:
        return self._url

    def probe(self) -> Capabilities:
        with self._call("probe"):
            info = self._root()
            health = self._client.cluster.health()
            nodes = self._client.nodes.info(metric="plugins")
        version = str(info["version"]["number"])
        plugins = node_components(nodes, version)
        native = opensearch_native_hybrid(plugins)
        notes = []
        if NEURAL_SEARCH_PLUGIN not in plugins:
            notes.append("neural-search plugin absent: no native hybrid query or score processors")
        if KNN_PLUGIN not in plugins:
            notes.append("k-NN plugin absent: no knn_vector field or knn query")
        return Capabilities(
            distribution="opensearch",
            version=version,
            url=self._url,
            cluster_name=info.get("cluster_name"),
            health=health.get("status"),
            knn=KNN_PLUGIN in plugins,
            plugins=plugins,
            native_hybrid=native,
            features=server_features(plugins),
            notes=notes,
        )

    def _root(self) -> dict[str, Any]:
        """``GET /``, refused when the server is Elasticsearch, which the OpenSearch adapter would misread."""
        try:
            info = responses.root_info(self._client.info(), url=self._url, operation="probe")
        except ox.TransportError as exc:
            # Every OpenSearch answers GET /; Elasticsearch builds without the rest-root module say 405.
            if exc.status_code != 405:
                raise
            raise self._not_opensearch(
                "it answers GET / with HTTP 405, as Elasticsearch without rest-root does"
            ) from exc
        version = info.get("version") or {}
        number = str(version.get("number", ""))
        major = number.split(".")[0]
        # Elasticsearch 8 and later; an Elasticsearch 7 domain of Amazon OpenSearch Service is served as OpenSearch.
        if str(version.get("distribution", "")).lower() != "opensearch" and major.isdigit() and int(major) >= 8:
            raise self._not_opensearch(f"GET / names version {number} and no OpenSearch distribution")
        return info

    def _not_opensearch(self, evidence: str) -> errors.EngineResponseError:
        return errors.EngineResponseError(
            f"the server is Elasticsearch, not OpenSearch ({evidence}): select it with engine = 'elasticsearch' "
            "(--engine elasticsearch, ESBRIDGE_ENGINE=elasticsearch), or engine = 'auto' to ask the server",
            url=self._url,
            operation="probe",
        )

    def index_exists(self, index: str) -> bool:
        with self._call("check index", index):
            return bool(self._client.indices.exists(index=index))

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        with self._call("create index", index):
            self._client.indices.create(index=index, body=dict(body))

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
            rows = self._client.cat.indices(index=pattern, format="json", bytes="b", expand_wildcards="open,closed")
        return responses.index_infos(rows)

    def alias_targets(self, alias: str) -> list[str]:
        with self._call("read alias", alias):
            if not self._client.indices.exists_alias(name=alias):
                return []
            answer = self._client.indices.get_alias(name=alias)
        return sorted(answer)

    def update_aliases(self, actions: Sequence[Mapping[str, Any]]) -> None:
        with self._call("update aliases"):
            self._client.indices.update_aliases(body={"actions": [dict(action) for action in actions]})

    def get_mapping(self, index: str) -> dict[str, Any]:
        with self._call("read mapping", index):
            answer = self._client.indices.get_mapping(index=index)
        return responses.single_index_section(answer, "mappings", url=self._url, index=index)

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        with self._call("read mapping", index):
            answer = self._client.indices.get_mapping(index=index)
        return {name: dict(content.get("mappings") or {}) for name, content in answer.items()}

    def get_index_settings(self, index: str) -> dict[str, Any]:
        with self._call("read settings", index):
            answer = self._client.indices.get_settings(index=index)
        return dict(responses.single_index_section(answer, "settings", url=self._url, index=index)["index"])

    def put_mapping(self, index: str, properties: Mapping[str, Any]) -> None:
        with self._call("update mapping", index):
            self._client.indices.put_mapping(index=index, body={"properties": dict(properties)})

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        with self._call("update mapping _meta", index):
            self._client.indices.put_mapping(index=index, body={"_meta": dict(meta)})

    def set_write_block(self, index: str, blocked: bool) -> None:
        if not blocked:
            with self._call("allow writes", index):
                self._client.indices.put_settings(index=index, body={"index.blocks.write": False})
            return
        # The add-block API, unlike the setting, waits for the writes in flight to finish.
        with self._call("block writes", index):
            answer = self._client.indices.add_block(index=index, block="write")
        confirm_write_block(answer, url=self._url, index=index)

    def count(self, index: str) -> int:
        with self._call("count", index):
            answer = self._client.count(index=index)
        return responses.counted(answer, url=self._url, index=index)

    def _start_reindex(self, source: str, dest: str) -> str:
        task: str = self._client.reindex(
            body={"source": {"index": source}, "dest": {"index": dest}}, wait_for_completion=False
        )["task"]
        return task

    def _reindex_tasks(self) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.list(actions="*reindex", detailed=True)
        return answer

    def _task_status(self, task: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.get(task_id=task)
        return answer

    def _cancel_and_wait(self, task: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.tasks.cancel(task_id=task, wait_for_completion=True)
        return answer

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        if not actions:
            return BulkResult(succeeded=[], failed=[])
        with self._call("bulk write", index):
            return responses.sent_in_bulk(index, actions, lambda lines: self._client.bulk(body=lines))

    def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        with self._call("search", index):
            answer = self._client.search(index=index, body=dict(body), **self._routing.params(body))
        return responses.search_result(answer, url=self._url, index=index)

    def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        lines = responses.msearch_lines(index, bodies, header=self._routing.params)
        with self._call("msearch", index):
            answer = self._client.msearch(body=lines)
        return responses.msearch_results(answer, len(bodies), url=self._url, index=index)

    def get_search_pipeline(self, name: str) -> dict[str, Any] | None:
        try:
            with self._call("get search pipeline"):
                answer = self._client.transport.perform_request("GET", _pipeline_path(name))
        except errors.EngineError as exc:
            if exc.status == 404:
                return None
            raise
        definition = answer.get(name) if isinstance(answer, Mapping) else None
        return dict(definition) if isinstance(definition, Mapping) else None

    def put_search_pipeline(self, name: str, body: Mapping[str, Any]) -> None:
        with self._call("put search pipeline"):
            self._client.transport.perform_request("PUT", _pipeline_path(name), body=dict(body))

    def delete_search_pipeline(self, name: str) -> bool:
        try:
            with self._call("delete search pipeline"):
                self._client.transport.perform_request("DELETE", _pipeline_path(name))
        except errors.EngineError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def close(self) -> None:
        self._client.close()


def _pipeline_path(name: str) -> str:
    return f"/_search/pipeline/{quote(name, safe='')}"


class AsyncOpenSearchEngine(Translating):
    """The query path of an OpenSearch cluster, for concurrent retrieval."""

    def __init__(self, settings: Settings, client: AsyncOpenSearch | None = None) -> None:
        self._url = settings.display_url
        self._client = client or AsyncOpenSearch(**client_options(settings, async_=True))
        self._routing = SearchRouting(settings.search)
        self._timeout = no_answer(settings.timeout_s, settings.retries)

    @property
    def dialect(self) -> Dialect:
        return "opensearch"

    @property
    def url(self) -> str:
        return self._url

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        with self._call("search", index):
            answer = await self._client.search(index=index, body=dict(body), **self._routing.params(body))
        return responses.search_result(answer, url=self._url, index=index)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        lines = responses.msearch_lines(index, bodies, header=self._routing.params)
        with self._call("msearch", index):
            answer = await self._client.msearch(body=lines)
        return responses.msearch_results(answer, len(bodies), url=self._url, index=index)

    async def close(self) -> None:
        await self._client.close()


def node_components(nodes: Mapping[str, Any], node_version: str) -> dict[str, str]:
    """Plugin and module name -> version, kept only when every node has it."""
    per_node: list[dict[str, str]] = []
    for node in nodes.get("nodes", {}).values():
        found: dict[str, str] = {}
        for component in [*node.get("modules", []), *node.get("plugins", [])]:
            name = _PLUGIN_CLASSES.get(component.get("classname", ""), component.get("name", ""))
            name = _PLUGIN_CLASSES.get(name, name)
            version = str(component.get("version", ""))
            # Classpath plugins say "NA"; they are built for the node's own version.
            found[name] = version if version[:1].isdigit() else node_version
        per_node.append(found)
    if not per_node:
        return {}
    common = set(per_node[0]).intersection(*per_node[1:])
    return {name: per_node[0][name] for name in sorted(common)}
