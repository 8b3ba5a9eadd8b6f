"""Whether the query model answers: ``/readyz`` embeds a short query as a search would, and waits as long as a
search waits for its embedding (``pipeline.embed_timeout_s``).

A model call that never returns (an in-process model that hangs: a search then answers lexical-only after that
time, every time) cannot be stopped. The probe keeps the one it started until it returns, instead of starting
another each time a load balancer asks, and says how long it has been waiting; once it returns, the next probe
starts afresh, so readiness comes back as soon as the model answers again.
"""

from __future__ import annotations

import asyncio
import time

from esbridge.embeddings.base import Embedder, embeddings_running, start_embedding

PROBE_QUERY = "readiness probe"


class ModelProbe:
    def __init__(self) -> None:
        self._pending: asyncio.Future[list[list[float]]] | None = None
        self._started = 0.0

    async def problem(self, embedder: Embedder, timeout_s: float) -> str | None:
        """Why the model is not answering a query embedding within ``timeout_s``, or None when it answered."""
        pending = self._pending
        if pending is None or pending.done() or pending.get_loop() is not asyncio.get_running_loop():
            self._pending = start_embedding(embedder, [PROBE_QUERY])
            self._pending.add_done_callback(_retrieve)
            self._started = time.monotonic()
        pending = self._pending
        assert pending is not None
        left = self._started + timeout_s - time.monotonic()
        done, _ = await asyncio.wait({pending}, timeout=max(left, 0.0))
        if not done:
            return (
                f"not answering: a query embedding has not returned in {time.monotonic() - self._started:.1f} s "
                f"(pipeline.embed_timeout_s = {timeout_s:g} s; {embeddings_running()} query embedding call(s) "
                "have not returned): searches answer lexical-only until it does"
            )
        problem = pending.exception()
        return None if problem is None else f"its query embedding failed: {problem}"


def _retrieve(probe: asyncio.Future[list[list[float]]]) -> None:
    """Mark a probe's error as seen: the probe that waited for it reported it, or it ended after its caller left."""
    if not probe.cancelled():
        probe.exception()
