"""Whether a search goes native (the engine fuses) or client-side, and why.

A fusion configuration the engines cannot express is an error in ``native`` mode and a reason to fuse
client-side in ``auto`` mode; so is an engine that lacks the feature, with a warning in ``native``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.capabilities import Capabilities
from esbridge.errors import ConfigError
from esbridge.query.models import NativeDetails
from esbridge.query.native.fusion import native_fusion
from esbridge.query.native.plan import NativePlan, plan


@dataclass(frozen=True)
class NativeChoice:
    """The native plan of a search (None: client-side), what the response says of it, and warnings."""

    plan: NativePlan | None = None
    details: NativeDetails | None = None
    notes: tuple[str, ...] = ()

    def outcome(self, *, used: bool, explain: bool = False) -> NativeChoice:
        """This choice once the native request has been tried: ``used`` says whether the engine fused,
        ``explain`` whether the request asked the engine to explain (its pipeline then says so)."""
        if self.plan is None:
            return self
        return NativeChoice(self.plan, self.plan.describe(used=used, explain=explain), self.notes)

    def failed(self, reason: str, warning: str | None = None) -> NativeChoice:
        """This choice once its native request failed: ``details.native.reason`` says why, and ``warning``, when
        given, joins its notes."""
        if self.details is None:
            return self
        notes = (*self.notes, warning) if warning else self.notes
        return NativeChoice(self.plan, self.details.model_copy(update={"reason": reason}), notes)

    def client_side(self) -> NativeChoice:
        """This choice, once made, with no native request to send: what the response says of it, and its notes,
        stand."""
        return NativeChoice(None, self.details, self.notes)


def _client_side(reason: str, *, warn: bool) -> NativeChoice:
    notes = (f"native hybrid is not available ({reason}); fused by esbridge instead",) if warn else ()
    return NativeChoice(None, NativeDetails(used=False, reason=reason), notes)


async def choose_native(
    mode: str,
    pipeline: PipelineSettings,
    method_name: str,
    weights: Mapping[str, float],
    params: Mapping[str, object],
    *,
    capabilities: Callable[[], Awaitable[Capabilities | str]],
) -> NativeChoice:
    """The plan for ``mode`` ``auto`` or ``native``; ``capabilities`` is asked only when the fusion can be native."""
    if mode == "client":
        return NativeChoice()
    if pipeline.fusion_level == "document":
        return _client_side("document-level fusion (pipeline.fusion_level) runs in esbridge", warn=mode == "native")
    if pipeline.knn_per_type:  # a native request holds one kNN clause over every type
        return _client_side(
            "one kNN request per entity type (pipeline.knn_per_type) runs in esbridge", warn=mode == "native"
        )
    try:
        fusion = native_fusion(method_name, weights, dict(params), pipeline.retrievers)
    except ConfigError as exc:
        if mode == "native":
            known = await capabilities()
            if isinstance(known, Capabilities) and known.distribution not in ("opensearch", "elasticsearch"):
                raise ConfigError(
                    f"mode 'native' asks the engine to fuse, and the {known.distribution} engine has no server-side "
                    "fusion: use mode 'auto' or 'client' (esbridge fuses)"
                ) from None
            raise
        return _client_side(str(exc), warn=False)
    known = await capabilities()
    outcome = known if isinstance(known, str) else plan(known, fusion)
    if isinstance(outcome, str):
        return _client_side(outcome, warn=mode == "native")
    return NativeChoice(outcome, outcome.describe(used=False))


def zero_weighted(native_plan: NativePlan, fused: Mapping[str, float]) -> str | None:
    """Why a native answer ranks nothing: a retriever weighted 0 found every hit and the other none, so the engine
    scored each 0 and their order is arbitrary. Fused by esbridge, the same lists keep that retriever's order."""
    if not fused or 0.0 not in native_plan.fusion.weights or any(score > 0 for score in fused.values()):
        return None
    return "every fused score was 0 (only a retriever weighted 0 found anything); fused by esbridge instead"


class Refusals:
    """Native requests the engine refused as invalid (HTTP 4xx: an unknown retriever or query type, a processor
    its plugins lack) while the same search's sub-queries, sent client-side, answered: the engine lacks what the
    request needs, not the query. Later searches of the same form (``NativePlan.form``) fuse client-side without
    asking it again, for the searcher's lifetime, as its probed capabilities are kept."""

    def __init__(self) -> None:
        self._reasons: dict[tuple[object, ...], str] = {}

    def remember(self, native_plan: NativePlan, *, explain: bool, reason: str) -> None:
        self._reasons[native_plan.form(explain=explain)] = reason

    def screen(self, choice: NativeChoice, *, mode: str, explain: bool) -> NativeChoice:
        """``choice``, or the client-side path when the engine refused its request before."""
        if choice.plan is None or (reason := self._reasons.get(choice.plan.form(explain=explain))) is None:
            return choice
        return _client_side(f"the engine refused this native hybrid request before: {reason}", warn=mode == "native")
