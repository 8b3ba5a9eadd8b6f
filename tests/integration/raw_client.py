"""Requests the tests make with an engine's own client, behind esbridge's back (a foreign index, a template, a data
stream's document): opensearch-py takes a request's body as ``body``, elasticsearch-py as keyword arguments."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def create_index(
    kind: str,
    client: Any,
    name: str,
    *,
    mappings: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    aliases: Mapping[str, Any] | None = None,
    knn: bool = False,
) -> None:
    """``knn``: the index holds vectors, which OpenSearch's k-NN plugin needs ``index.knn`` for."""
    if knn and kind == "opensearch":
        settings = {**(settings or {}), "index": {**(settings or {}).get("index", {}), "knn": True}}
    parts = {"mappings": mappings, "settings": settings, "aliases": aliases}
    given = {key: dict(value) for key, value in parts.items() if value is not None}
    if kind == "opensearch":
        client.indices.create(index=name, body=given)
    else:
        client.indices.create(index=name, **given)


def index_document(kind: str, client: Any, index: str, document: Mapping[str, Any], **params: Any) -> None:
    """``document`` written into ``index`` (``params``: ``id``, ``op_type``, ``refresh``)."""
    if kind == "opensearch":
        client.index(index=index, body=dict(document), **params)
    else:
        client.index(index=index, document=dict(document), **params)


def put_index_template(kind: str, client: Any, name: str, body: Mapping[str, Any]) -> None:
    if kind == "opensearch":
        client.indices.put_index_template(name=name, body=dict(body))
    else:
        client.indices.put_index_template(name=name, **body)


@contextmanager
def templated_alias(
    kind: str, client: Any, name: str, template: Mapping[str, Any], *, rollovers: int = 0
) -> Iterator[str]:
    """Alias ``name`` over ``<name>-000001`` (its write index), made from index template ``name`` (``template``),
    rolled over ``rollovers`` times by hand; its indices and template deleted afterwards."""
    put_index_template(kind, client, name, template)
    try:
        create_index(kind, client, f"{name}-000001", aliases={name: {"is_write_index": True}})
        for _ in range(rollovers):
            client.indices.rollover(alias=name)
        yield name
    finally:
        try:
            client.indices.delete(index=f"{name}-*", expand_wildcards="all")
        finally:
            client.indices.delete_index_template(name=name)
