"""Which search type and which shard copies a search asks for (``[search]`` settings), as request parameters.

Replicas of a shard hold the same documents but not always the same segments (merges, deletions not yet
merged away), so BM25 statistics and therefore scores can differ between copies; a query answered by
different copies each time may rank differently each time. ``preference`` pins the copies: per request
body ("query"), per client ("session") or as the operator says.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from typing import Any

from esbridge.config.search import SearchSettings


class SearchRouting:
    """The ``search_type`` and ``preference`` parameters for each search of one client."""

    def __init__(self, settings: SearchSettings) -> None:
        self.search_type = settings.search_type
        self.preference = settings.preference
        self._session = f"esbridge-{secrets.token_hex(8)}"

    def params(self, body: Mapping[str, Any]) -> dict[str, str]:
        """Query-string parameters of ``_search`` (the same keys go into an ``_msearch`` header line)."""
        found: dict[str, str] = {}
        if self.search_type != "query_then_fetch" and takes_search_type(body):
            found["search_type"] = self.search_type
        preference = preference_for(self.preference, body, self._session)
        if preference is not None:
            found["preference"] = preference
        return found


def takes_search_type(body: Mapping[str, Any]) -> bool:
    """Whether a body may be sent with a ``search_type`` other than the default.

    Not with Elasticsearch's top-level ``knn`` section, which chooses its own (it runs a DFS phase of its own)
    and refuses one given with it, nor with its ``retriever`` tree; not with OpenSearch's ``hybrid`` query,
    whose score normalization runs between the query and fetch phases and is skipped by a DFS search on
    several shards (a known neural-search defect; newer versions refuse the combination).
    """
    query = body.get("query")
    return not ("knn" in body or "retriever" in body or (isinstance(query, Mapping) and "hybrid" in query))


def preference_for(setting: str, body: Mapping[str, Any], session: str) -> str | None:
    """The ``preference`` value for ``body``: None leaves the choice of copies to the engine.

    Custom strings must not start with ``_`` (the engines reserve those for named preferences such as
    ``_local``), which the hashes here never do.
    """
    if setting == "engine":
        return None
    if setting == "session":
        return session
    if setting == "query":
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return "q" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return setting
