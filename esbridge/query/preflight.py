"""What a search asks of its engine before its stages, within the search's time like them: the check of the
query model against the index's (``model_check``) and the engine's capabilities (probed once).

Both read the engine in a worker thread (``factory.on_engine``), given the search's deadline, whose engine calls
end by it (``esbridge.engines.call_deadline``) as the await does. A probe without an answer in time leaves the
capabilities unknown for this search only: it goes on client-side, as with an unreachable probe. A model check
without an answer in time fails the search (``EngineTimeout``): searched unchecked, a query embedded by another
model would be ranked against the index's vectors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from esbridge import errors
from esbridge.engines.call_deadline import DeadlinePassed
from esbridge.engines.capabilities import Capabilities
from esbridge.query.deadline import halfway, no_answer, time_left, within
from esbridge.query.model_check import READING, ModelGuard

Probe = Callable[[float], Awaitable[Capabilities]]
"""Probes the engine's capabilities; its engine calls end by the deadline it is given (``time.perf_counter()``)."""
_REFUSALS = (errors.AuthenticationError, errors.AuthorizationError, errors.RequestRejected, errors.UnsupportedFeature)


async def checked_model(guard: ModelGuard | None, ends: float, *, url: str) -> str | None:
    """``guard.check()`` by the search's deadline ``ends``: None or a warning, ``ModelMismatch``, or
    ``EngineTimeout`` when the index's model could not be read in time."""
    if guard is None:
        return None
    left = time_left(ends)
    steps: list[str] = []
    try:
        async with within(left):
            return await guard.check(ends, steps)
    except (asyncio.TimeoutError, DeadlinePassed):
        raise errors.EngineTimeout(
            f"{steps[-1] if steps else READING} ({no_answer(left or 0.0)}); the search was not run, as its "
            "query model could not be checked against the model that made the index's vectors",
            url=url,
            operation="check the query model",
            index=guard.index,
        ) from None


class EngineCapabilities:
    """An engine's capabilities, probed once; or why they are unknown."""

    def __init__(self, probe: Probe | None) -> None:
        self._probe = probe
        self._known: Capabilities | str | None = None

    def unknown(self, reason: str) -> None:
        """From now on the capabilities are unknown, for ``reason`` (a refusal that would recur)."""
        self._known = reason

    async def by(self, ends: float) -> Capabilities | str:
        """The capabilities, probed if not known yet, within half the time left until the search's deadline
        ``ends`` (``halfway``: the retrievers keep the rest). A probe that failed for a reason that passes (no
        answer, in time or at all) is tried again by the next search; one refused for good (no monitor privilege)
        is not."""
        if self._known is not None or self._probe is None:
            return self._known or "the engine's capabilities were not probed"
        ends = halfway(ends)
        left = time_left(ends)
        try:
            async with within(left):
                self._known = await self._probe(ends)
        except (asyncio.TimeoutError, DeadlinePassed):
            given = f"{left or 0.0:.2f}s, half the time left of the search's"
            return f"the engine's capabilities were not probed: no answer within {given}"
        except errors.EsbridgeError as exc:
            if not isinstance(exc, _REFUSALS):
                return f"the engine could not be probed: {exc}"
            self._known = f"the engine could not be probed: {exc}"
        return self._known
