"""What one retrieval's answer means for the search: the mode it answers in, or the error it fails with, and
whether the retrievers must be asked again, deeper, for ``top_n`` documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from esbridge import errors
from esbridge.ids import document_of
from esbridge.query.models import SearchMode
from esbridge.query.native.choice import NativeChoice
from esbridge.query.retrieval import Retrieved
from esbridge.query.types import FusionDecision

DEEPEST_TOP_K = 1000
"""How many chunks a retriever is asked for at most when its first list held too few documents (``deeper``)."""


def search_mode(retrieved: Retrieved, warnings: Sequence[str], *, url: str, index: str) -> SearchMode:
    """``hybrid``, ``lexical-only``, ``semantic-only`` or ``native-hybrid``; when no retriever answered, the
    engine's refusal, or ``EngineTimeout`` (a hung engine: the service answers 504) or ``EngineUnavailable``."""
    mode = "native-hybrid" if retrieved.native else _mode(retrieved.semantic)
    if mode is not None:
        return mode
    if retrieved.rejected is not None:  # the request itself is at fault: sending it again will not help
        raise retrieved.rejected
    unavailable = errors.EngineTimeout if retrieved.timed_out else errors.EngineUnavailable
    raise unavailable("; ".join(warnings) or "no retriever answered", url=url, operation="search", index=index)


def _mode(answered: Mapping[str, bool]) -> SearchMode | None:
    """From which retrievers answered, by kind: both kinds is hybrid."""
    lexical, semantic = (not all(answered.values())), any(answered.values())
    if not answered:
        return None
    if lexical and semantic:
        return "hybrid"
    return "semantic-only" if semantic else "lexical-only"


def deeper(retrieved: Retrieved, *, top_k: int, top_n: int, collapse: bool) -> int | None:
    """The depth to ask the retrievers again at, or None when this answer will do. With collapse, the chunks of a
    few long documents can fill every list and leave fewer than ``top_n`` documents: then, when a list was full,
    four times deeper (at most ``DEEPEST_TOP_K``)."""
    runs = retrieved.runs.values()
    if not collapse or top_k >= DEEPEST_TOP_K or not any(len(run) >= top_k for run in runs):
        return None
    documents = {document_of(item, retrieved.sources.get(item, {})) for run in runs for item in run}
    return None if len(documents) >= top_n else min(top_k * 4, DEEPEST_TOP_K)


def lost(previous: Retrieved, again: Retrieved) -> str | None:
    """Why a deeper round's answer is worse than the one before it (a retriever that answered did not, or an
    answer lacked shards), or None when it can replace it."""
    missing = [name for name in previous.runs if name not in again.runs]
    if missing:
        return "; ".join(again.warnings) or f"{', '.join(missing)} did not answer"
    if again.partial and not previous.partial:
        return "; ".join(again.warnings) or "an answer lacked shards"
    return None


def decided_choice(first: Retrieved, choice: NativeChoice) -> NativeChoice:
    """The native decision a deeper round keeps: the first round's. Native when the engine fused it; otherwise
    client-side, as the first round ended (a native request refused or failed is not sent again), with what the
    response says of it and its warnings."""
    return choice if first.native else choice.client_side()


def added(timings: Mapping[str, float], more: Mapping[str, float]) -> dict[str, float]:
    """Step timings of two parts of one search, each step's milliseconds summed."""
    total = dict(timings)
    for step, ms in more.items():
        total[step] = round(total.get(step, 0.0) + ms, 2)
    return total


def explained(decision: FusionDecision | None, notes: Sequence[str]) -> FusionDecision | None:
    """The fusion's decision with what retrieval did for it (``Retrieved.explained``) added to its reason."""
    if not notes:
        return decision
    if decision is None:
        return FusionDecision(reason="; ".join(notes))
    return replace(decision, reason="; ".join((decision.reason, *notes)))
