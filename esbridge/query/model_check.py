"""Before a search: is the query model the model that made the index's vectors?

The index records its model in its mapping's ``_meta`` (``esbridge.embeddings.identity``). A searcher
reads that record once and again at most every ``ttl_s`` seconds (an alias may move to a version built
with another model), so a search pays for the read only on its searcher's first query. An index esbridge
made before records existed is checked by its vectors instead (``agreement``: a few stored vectors
against the query model's vectors of the same texts, read as seldom). An attached index that records no
model is searched as before; so is one whose mapping cannot be read (a role allowed to search but not to
read mappings), with a warning that says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from esbridge import errors
from esbridge.attach.proposal import VectorInfo, flatten, vector_info
from esbridge.embeddings.identity import (
    PENDING_KEY,
    SAME_MODEL_COSINE,
    ModelIdentity,
    compare,
    mismatch_error,
    mismatch_warning,
    pending_identity,
    recorded_identity,
    unfinished_warning,
    unrecorded_mismatch,
    unrecorded_mismatch_warning,
)
from esbridge.engines.base import Engine, rollover_template
from esbridge.engines.index_templates import is_data_stream
from esbridge.mappings.schema import SCHEMA_META_KEY, VECTOR_FIELD

MappingReader = Callable[[float], Awaitable[Mapping[str, Any]]]
"""Reads the index's mapping (``searched_mapping``: an alias or data stream resolved to its indices), its
engine calls ending by the deadline it is given (``time.perf_counter()``; ``math.inf``: none)."""
AgreementReader = Callable[[float], Awaitable[float | None]]
"""The lowest cosine between a few stored vectors and the query model's vectors of their texts (None when the
index holds none), its engine calls ending by the deadline it is given."""

RECORD_TTL_S = 30.0


def searched_mapping(engine: Engine, index: str, vector: str = VECTOR_FIELD) -> Mapping[str, Any]:
    """The mapping a search of ``index`` is checked against. A name over several indices (an alias with an old
    version added back, indices split by time, a data stream or an alias rolled over) is searched only when they
    hold vectors that compare, each recording the same model (or another backend or precision of it, or none
    at all) and mapping the same vector dimension, and each mapping the searched field ``vector`` in the same
    space (similarity); else ``AmbiguousAlias`` names each index and what it records or maps, as a query embedded
    one way would be ranked against vectors of another, or its scores from one space interleaved with scores of
    another. A name behind which there is no index (a pattern matching none) is ``IndexNotFound``, as a missing
    index is."""
    mappings = dict(sorted(engine.get_mappings(index).items()))
    if not mappings:
        raise errors.IndexNotFound(f"no index matches {index!r}", url=engine.url, operation="read mapping", index=index)
    if len(mappings) == 1:
        return next(iter(mappings.values()))
    spaces = {
        target: (recorded_identity(mapping, target), _dimension(mapping, vector))
        for target, mapping in mappings.items()
    }
    (first_model, first_dimension), *others = spaces.values()
    if all(
        dimension == first_dimension and _same_space(first_model, model) for model, dimension in others
    ):  # a re-embedding left unfinished in any of them is warned about, as for one index
        _refuse_spaces(index, mappings, vector)
        pending = [m for m in mappings.values() if (m.get("_meta") or {}).get(PENDING_KEY)]
        return (pending or list(mappings.values()))[0]
    held = "; ".join(_holds(target, model, dimension) for target, (model, dimension) in spaces.items())
    raise errors.AmbiguousAlias(
        f"{_what(index, mappings)} {index!r} points to several indices whose vectors are not of one model ({held}): "
        f"a search would rank the query's vector against vectors of another model. {_way_out(engine, index, mappings)}"
    )


def _refuse_spaces(index: str, mappings: Mapping[str, Any], vector: str) -> None:
    """``AmbiguousAlias`` when the indices map ``vector`` in more than one space. Each engine answers one kNN
    request over them, each index scoring in its own space (cosine's 1.0 beside l2's 0.05 for the same closeness):
    the hits would interleave by scores that do not compare. A field whose space its mapping does not give (a
    trained model's) is not held against the others."""
    spaces = {target: _space(mapping, vector) for target, mapping in mappings.items()}
    if len({space for space in spaces.values() if space is not None}) < 2:
        return
    held = "; ".join(f"{target}: {space or 'space not in its mapping'}" for target, space in spaces.items())
    what = _what(index, mappings)
    way = (
        "search one backing index (--index NAME)"
        if what == "data stream"
        else "point the alias at indices of one space (POST _aliases), search one of them (--index NAME)"
    )
    raise errors.AmbiguousAlias(
        f"{what} {index!r} points to several indices whose vector field {vector} is not of one space ({held}): one "
        "kNN request would rank hits by scores of different spaces, which do not compare. A field's space is fixed "
        f"when its index is made: {way}, or reindex the others into a mapping of one space"
    )


def _vector(mapping: Mapping[str, Any], vector: str) -> VectorInfo | None:
    """What the mapping gives the vector field ``vector`` (a path such as ``body.embedding``), engine defaults
    included; None when it maps no such vector field."""
    for name, definition in flatten(mapping.get("properties") or {}):
        if name == vector and definition.get("type") in ("knn_vector", "dense_vector"):
            return vector_info(name, definition)
    return None


def _space(mapping: Mapping[str, Any], vector: str) -> str | None:
    """The space ``vector`` is mapped in; None when the mapping does not give it."""
    found = _vector(mapping, vector)
    return found.space if found is not None else None


def _dimension(mapping: Mapping[str, Any], vector: str) -> int | None:
    """The dimension of ``vector`` (esbridge's own field, or an attached index's); None when it maps none."""
    found = _vector(mapping, vector)
    return found.dimension if found is not None else None


def _what(index: str, mappings: Mapping[str, Any]) -> str:
    return "data stream" if is_data_stream(index, mappings) else "alias"


def _way_out(engine: Engine, index: str, mappings: Mapping[str, Any]) -> str:
    record = (
        "record the model in the template's mapping _meta (esbridge_model) so that each rollover carries it, and in "
        f"each {{}} that lacks it (`esbridge index record-model --index {index} --in-template` does both)"
    )
    if is_data_stream(index, mappings):
        return (
            "A data stream's new backing index takes its mapping _meta from the index template, not from the older "
            f"backing indices: {record.format('backing index')}"
        )
    rollover = rollover_template(engine, index)
    if rollover is not None and rollover.template is not None:
        return (
            f"Alias {index}'s next index ({rollover.next_index}, made when it is rolled over) takes its mapping _meta "
            f"from index template {rollover.template}, not from the older indices: {record.format('index')}"
        )
    return "Point the alias at one index (POST _aliases), or search one of them (--index NAME)"


def _holds(index: str, model: ModelIdentity | None, dimension: int | None) -> str:
    recorded = model.describe() if model is not None else "no model recorded"
    if dimension is None:
        return f"{index}: {recorded}, no vector field mapped"
    mapped = "" if model is not None and dimension == model.dimension else f", {dimension}-dimensional vectors"
    return f"{index}: {recorded}{mapped}"


def _same_space(first: ModelIdentity | None, other: ModelIdentity | None) -> bool:
    if first is None or other is None:
        return first is other
    return compare(first, other).compatible


READING = "the index's model record was not read"
COMPARING = "the index records no model, and a sample of its vectors was not compared with the query model's"


class ModelGuard:
    """Refuses (``ModelMismatch``) a search whose query model is not the index's, or with ``allow_mismatch``
    answers it with a warning."""

    def __init__(
        self,
        index: str,
        query: ModelIdentity,
        read_mapping: MappingReader,
        *,
        allow_mismatch: bool = False,
        agreement: AgreementReader | None = None,
        ttl_s: float = RECORD_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index = index
        self.query = query
        self.allow_mismatch = allow_mismatch
        self._read = read_mapping
        self._ttl_s = ttl_s
        self._clock = clock
        self._recorded: tuple[float, ModelIdentity | str | None] | None = None
        self._agreement = agreement
        self._esbridge_made = False
        self._pending: ModelIdentity | None = None
        self._agreed: tuple[float, float | None] | None = None

    async def recorded(self, ends: float = math.inf) -> ModelIdentity | str | None:
        """The index's recorded model, read again (by the deadline ``ends``) when the last read is older than
        ``ttl_s``; or why it could not be read."""
        now = self._clock()
        if self._recorded is None or now - self._recorded[0] >= self._ttl_s:
            try:
                mapping = await self._read(ends)
                found: ModelIdentity | str | None = recorded_identity(mapping, self.index)
                self._pending = pending_identity(mapping, self.index)
                meta = mapping.get("_meta")
                self._esbridge_made = isinstance(meta, Mapping) and SCHEMA_META_KEY in meta
            except errors.EngineError as exc:
                # A search-only role may lack the privilege to read mappings (view_index_metadata); the search
                # itself may still be allowed, so it goes on, unchecked, and says so.
                found = f"the query model was not checked against the index's: its mapping could not be read ({exc})"
                if isinstance(exc, errors.IndexNotFound):
                    return found  # not remembered: the next write may create the index
            self._recorded = (now, found)
        return self._recorded[1]

    async def check(self, ends: float = math.inf, steps: list[str] | None = None) -> str | None:
        """None when the query model may search the index; a warning when it searches unchecked or with a forced
        mismatch; else raises ``ModelMismatch``. Its engine reads end by the deadline ``ends``
        (``time.perf_counter()``): one cut short there is not remembered. ``steps`` gets what it is doing appended
        as it starts it (``READING``, ``COMPARING``): the last one is what a caller that stopped waiting cut short."""
        steps = steps if steps is not None else []
        steps.append(READING)
        recorded = await self.recorded(ends)
        if recorded is None:
            steps.append(COMPARING)
            return await self._check_vectors(ends)
        if isinstance(recorded, str):
            return recorded
        verdict = compare(recorded, self.query)
        if verdict.compatible:
            pending = self._pending
            if pending is not None and not compare(pending, self.query).compatible:
                return unfinished_warning(self.index, pending)
            return None
        if not self.allow_mismatch:
            raise mismatch_error(self.index, recorded, self.query, verdict)
        return mismatch_warning(self.index, recorded, self.query, verdict)

    async def _check_vectors(self, ends: float) -> str | None:
        """``check`` for an index that records no model: its stored vectors against the query model's, when
        esbridge made the index (its mapping's ``_meta`` names esbridge's schema)."""
        if self._agreement is None or not self._esbridge_made:
            return None
        now = self._clock()
        if self._agreed is None or now - self._agreed[0] >= self._ttl_s:
            self._agreed = (now, await self._agreement(ends))
        agreed = self._agreed[1]
        if agreed is None or agreed >= SAME_MODEL_COSINE:
            return None
        if not self.allow_mismatch:
            raise unrecorded_mismatch(self.index, self.query, agreed)
        return unrecorded_mismatch_warning(self.index, self.query, agreed)
