"""The [search] settings on the live engines: dfs and each kind of preference are accepted by _search and
_msearch alike and answer the same as the defaults on a one-shard index."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.query.models import SearchRequest
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS, search


@pytest.mark.parametrize("preference", ["query", "session", "engine", "_local", "tenant-42"])
def test_search_type_and_preference_are_accepted_and_change_nothing_on_one_shard(
    engine: Engine,
    engine_settings: Settings,
    alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
    preference: str,
) -> None:
    load_records(engine, alias, embedder, tmp_path, RECORDS)
    request = SearchRequest(query="electricity from the sun")
    plain = search(engine_settings, alias, embedder, request)
    routed = engine_settings.model_copy(
        update={"search": engine_settings.search.model_copy(update={"search_type": "dfs_query_then_fetch",
                                                                    "preference": preference})}
    )  # fmt: skip
    for execution in ("concurrent", "msearch"):
        answer = search(routed, alias, embedder, request, execution=execution)
        assert answer.warnings == [] and answer.search_mode == "hybrid"
        assert [(hit.id, round(hit.score, 6)) for hit in answer.results] == [
            (hit.id, round(hit.score, 6)) for hit in plain.results
        ]
