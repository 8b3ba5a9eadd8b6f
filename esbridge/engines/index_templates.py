"""Index templates on OpenSearch and Elasticsearch: the template a data stream's rollovers take their backing
index's mapping from, read and written whole (``IndexTemplates`` in ``esbridge.engines.base``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from esbridge import errors

# Read with the template but refused by a put of it (Elasticsearch reports when a template was made and changed).
_READ_ONLY = ("created_date", "created_date_millis", "modified_date", "modified_date_millis")


def is_data_stream(name: str, indices: Iterable[str]) -> bool:
    """Whether ``indices``, those behind ``name``, are a data stream's backing indices, which both engines name
    ``.ds-<stream>-...``."""
    indices = list(indices)
    return bool(indices) and all(index.startswith(f".ds-{name}-") for index in indices)


def stream_template(answer: Mapping[str, Any], name: str) -> str | None:
    """The ``template`` a ``GET _data_stream/<name>`` answer names for stream ``name``: the composable template
    that matches the stream's name now, which its next rollover takes the new backing index's mapping from."""
    for stream in answer.get("data_streams") or []:
        if stream.get("name") == name:
            template = stream.get("template")
            return str(template) if template else None
    return None


def template_body(answer: Mapping[str, Any], name: str, *, url: str) -> dict[str, Any]:
    """The body of template ``name`` from a ``GET _index_template/<name>`` answer, as a put of it takes it."""
    for entry in answer.get("index_templates") or []:
        if entry.get("name") == name:
            body = dict(entry.get("index_template") or {})
            return {key: value for key, value in body.items() if key not in _READ_ONLY}
    raise errors.IndexNotFound(
        f"no index template named {name!r}", url=url, operation="read index template", index=name
    )


def not_a_stream(exc: errors.EngineError) -> bool:
    """Whether ``GET _data_stream/<name>`` failed because ``name`` is no data stream (404), or the engine has no
    data streams (a build without the module: "no handler found")."""
    return exc.status == 404 or "no handler found" in str(exc)


class _Templates:
    _url: str

    def _call(self, operation: str, index: str | None = None) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _get_data_stream(self, name: str) -> Mapping[str, Any]:
        raise NotImplementedError

    def alias_targets(self, alias: str) -> list[str]:
        raise NotImplementedError

    def data_stream_template(self, name: str) -> str | None:
        if self.alias_targets(name):  # asked about an alias, OpenSearch answers 400, not an empty list
            return None
        try:
            with self._call("read data stream", name):
                answer = self._get_data_stream(name)
        except errors.EngineError as exc:
            if not_a_stream(exc):
                return None
            raise
        return stream_template(answer, name)


class OpenSearchTemplates(_Templates):
    """``IndexTemplates`` through opensearch-py."""

    _client: Any

    def _get_data_stream(self, name: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.indices.get_data_stream(name=name)
        return answer

    def get_index_template(self, name: str) -> dict[str, Any]:
        with self._call("read index template", name):
            answer = self._client.indices.get_index_template(name=name)
        return template_body(answer, name, url=self._url)

    def put_index_template(self, name: str, body: Mapping[str, Any]) -> None:
        with self._call("update index template", name):
            self._client.indices.put_index_template(name=name, body=dict(body))

    def resolved_template_mappings(self, name: str) -> dict[str, Any]:
        with self._call("simulate index template", name):
            answer = self._client.indices.simulate_template(name=name)
        return dict((answer.get("template") or {}).get("mappings") or {})


class ElasticsearchTemplates(_Templates):
    """``IndexTemplates`` through elasticsearch-py."""

    _client: Any

    def _get_data_stream(self, name: str) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = self._client.indices.get_data_stream(name=name).body
        return answer

    def get_index_template(self, name: str) -> dict[str, Any]:
        with self._call("read index template", name):
            answer = self._client.indices.get_index_template(name=name).body
        return template_body(answer, name, url=self._url)

    def put_index_template(self, name: str, body: Mapping[str, Any]) -> None:
        with self._call("update index template", name):
            self._client.indices.put_index_template(name=name, body=dict(body))

    def resolved_template_mappings(self, name: str) -> dict[str, Any]:
        with self._call("simulate index template", name):
            answer = self._client.indices.simulate_template(name=name).body
        return dict((answer.get("template") or {}).get("mappings") or {})
