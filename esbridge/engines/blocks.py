"""The write block (``index.blocks.write``) ``esbridge index reindex`` puts on the index it copies, and
what a writer that meets it is told.

OpenSearch and Elasticsearch refuse each write to a blocked index with status 403 and a
``cluster_block_exception`` naming the block; the embedded engine answers with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from esbridge import errors
from esbridge.engines.base import BulkItemFailure

BLOCKED_STATUS = 403


def write_blocked(index_settings: Mapping[str, Any]) -> bool:
    """Whether the ``index`` settings object (as ``get_index_settings`` returns it) blocks writes.

    Engines report the value as the string ``"true"``; nested or flat (``blocks.write``) keys both count.
    """
    blocks = index_settings.get("blocks")
    value = blocks.get("write") if isinstance(blocks, Mapping) else index_settings.get("blocks.write")
    return str(value).lower() == "true"


FLOOD_STAGE_BLOCK = "index.blocks.read_only_allow_delete"
"""The block an engine sets on every index of a node whose disk passed the flood-stage watermark. The writes it
refuses are answered with status 429, which a reindex task retries for about a minute (other blocks answer 403,
which ends the task at once)."""


def flood_stage_block(index_settings: Mapping[str, Any]) -> str | None:
    """``FLOOD_STAGE_BLOCK`` when the ``index`` settings object (nested or flat keys) has it, else None."""
    blocks = index_settings.get("blocks")
    value = (
        blocks.get("read_only_allow_delete")
        if isinstance(blocks, Mapping)
        else index_settings.get("blocks.read_only_allow_delete")
    )
    return FLOOD_STAGE_BLOCK if str(value).lower() == "true" else None


def cluster_block_reason(index: str) -> str:
    """The reason a cluster gives for a write its write block refused, as ``BulkItemFailure.reason`` holds it."""
    return f"cluster_block_exception: index [{index}] blocked by: [FORBIDDEN/8/index write (api)];"


def confirm_write_block(answer: Mapping[str, Any], *, url: str, index: str) -> None:
    """Raise unless an add-block answer says every shard took the block (so no write is still in flight).

    An index that had the block already is answered with no shards acknowledged and no indices listed.
    """
    had_it = answer.get("indices") == []
    if answer.get("acknowledged") and (answer.get("shards_acknowledged") or had_it):
        return
    raise errors.EngineResponseError(
        f"the write block was not confirmed by every shard in time (answer: {dict(answer)}); writes may still "
        "be landing",
        url=url,
        operation="block writes",
        index=index,
    )


def write_blocked_reason(index: str, engine_reason: str) -> str:
    """What a writer refused by a write block is told: why that probably is, that nothing was written, and
    what to do. The engine's own words stay at the end."""
    return (
        f"{index} is write-blocked, probably because `esbridge index reindex` is copying it to a new version "
        "(or a reindex was interrupted: run `esbridge index reindex` again); nothing was written for this item, "
        f"write it again once the reindex has finished [{engine_reason}]"
    )


def explain_write_block(failure: BulkItemFailure, index: str) -> BulkItemFailure:
    """``failure`` with a reason that says what happened when the write block refused it; others unchanged."""
    if not failure.write_blocked or failure.reason.startswith(f"{index} is write-blocked"):
        return failure
    return replace(failure, reason=write_blocked_reason(index, failure.reason))
