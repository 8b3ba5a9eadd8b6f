"""A server-side copy that makes no progress is given up after ``reindex_stall_timeout_s``, on the real engines.

The copy is stalled without stopping a node: as the copy starts, the new version is made again with its one shard
allowed only on a node that does not exist, so each bulk write of the task waits for a primary that never comes
(up to the engine's one-minute limit per write, which the cancelled task waits out)."""

from __future__ import annotations

import time
from typing import cast

import pytest

from esbridge.config import Settings, load_settings
from esbridge.engines import Engine, connect
from esbridge.engines.blocks import write_blocked
from esbridge.errors import EngineTimeout
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.engines import require_feature
from tests.integration.test_index_lifecycle import DIMENSION, DuringTheCopy, chunk, manager
from tests.integration.test_partial_shards import create_stranded_index


def test_a_stalled_copy_is_cancelled_at_the_configured_limit_naming_it(
    engine_settings: Settings, engine_kind: str, alias: str
) -> None:
    require_feature(engine_kind, "reindex", "the server-side copy runs as a task on the server")
    url = str(engine_settings.url)
    settings = load_settings(url=url, engine=engine_kind, timeout_s=30, reindex_stall_timeout_s=2)
    limited = connect(settings)
    try:
        manager(limited, alias).create()
        assert not limited.bulk(alias, [chunk(f"n{n}#0", title=f"note {n}") for n in range(20)]).failed
        limited.refresh(alias)
        old, new = f"{alias}-v1", f"{alias}-v2"

        def strand_the_new_version() -> None:
            limited.delete_index(new)
            create_stranded_index(limited, url, alias, new, DIMENSION)

        during = cast(Engine, DuringTheCopy(limited, strand_the_new_version))
        started = time.monotonic()
        with pytest.raises(EngineTimeout) as gave_up:
            IndexManager(during, alias, IndexParameters(dimension=DIMENSION)).reindex()
        took = time.monotonic() - started

        message = str(gave_up.value)
        assert "the server's task made no progress for 2s (0 of 20 documents done)" in message
        assert "raise reindex_stall_timeout_s (ESBRIDGE_REINDEX_STALL_TIMEOUT_S) to wait longer" in message
        assert took < 120  # the limit, then the cancelled task's pending write (a minute at most)
        assert limited.alias_targets(alias) == [old]
        assert not limited.index_exists(new)
        assert not write_blocked(limited.get_index_settings(old))
        assert limited.count(alias) == 20
    finally:
        limited.close()
