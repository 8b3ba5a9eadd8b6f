"""Checks an ``esbridge index reindex`` makes before it creates, blocks or moves anything."""

from __future__ import annotations

from esbridge import errors
from esbridge.engines.base import Engine
from esbridge.mappings.copy import COPIED_FIELDS
from esbridge.mappings.schema import SCHEMA_META_KEY, mapped_vector_dimension


def fields_left_out(engine: Engine, old: str) -> tuple[str, ...]:
    """Fields added by hand to an esbridge index (``mapping diff``: "a reindex drops it"). A server-side copy
    refuses every document holding one, so such an index is copied through the client, which leaves them out.
    An index esbridge did not create keeps the server-side copy, which refuses rather than drops its data."""
    mapping = engine.get_mapping(old)
    if SCHEMA_META_KEY not in (mapping.get("_meta") or {}):
        return ()
    return tuple(name for name in mapping.get("properties", {}) if name not in COPIED_FIELDS)


def refuse_another_dimension(engine: Engine, old: str, wanted: int) -> None:
    """A copy keeps each vector as it is, so a new version of another dimension would refuse every chunk that
    has one; an empty index moves to the new dimension."""
    dimension = mapped_vector_dimension(engine.get_mapping(old))
    if dimension is None or dimension == wanted or engine.count(old) == 0:
        return
    raise errors.DimensionMismatch(
        f"index {old} holds {dimension}-dimensional vectors and the wanted mapping has "
        f"{wanted} (embedding.dimension, or the model's): a reindex copies vectors as they are, "
        "so it cannot change their dimension; nothing was changed. Ingest the sources into a new index "
        f"(--index NAME) with the new model, or leave the dimension at {dimension} to reindex"
    )


def refuse_a_red_source(engine: Engine, old: str) -> None:
    """A red index answers searches, counts and scrolls from the shards it has, without saying that others are
    missing (OpenSearch does not count them as failed), so a copy of it would lack their documents while
    both counts agree. Nothing is created, blocked or moved."""
    health = next((info.health for info in engine.list_indices(old) if info.name == old), None)
    if health == "red":
        raise errors.IndexUnavailable(
            f"refusing to reindex {old}: it is red (some of its primary shards have no active copy, e.g. their "
            "node is down), and a copy would silently lack their documents; the alias stays on "
            f"{old}. Bring the nodes back (GET _cluster/health/{old}?level=shards says which shards) and run "
            "`esbridge index reindex` again",
            url=engine.url,
            operation="reindex",
            index=old,
        )
