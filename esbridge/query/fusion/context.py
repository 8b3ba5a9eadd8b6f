"""What a fusion method may read besides the runs, and what it asks of the searcher.

Every fusion method, built-in or plugin, is called the same way (``fuse``)::

    method(runs, weights=..., context=FusionContext(...), **params)

A method that declares a ``context`` keyword gets the query, the request and the stored fields of
every candidate; one that does not (a plugin written for the plain signature) is called without it.
What a method needs before retrieval (the candidates' texts, or only the lexical retrievers for some
queries) it declares with ``@fusion_traits``, so the searcher never asks which method it runs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from esbridge.errors import ConfigError
from esbridge.query.types import FusionResult, Runs

if TYPE_CHECKING:
    from esbridge.query.models import SearchRequest

TEXT_FIELDS = ("title", "body", "code", "path")
"""The stored fields ``FusionContext.text`` joins."""


@dataclass(frozen=True)
class FusionContext:
    """One search as a fusion method sees it."""

    query: str = ""
    request: SearchRequest | None = None
    sources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """id -> the stored fields the retrievers returned for it."""
    vectors_from: str | None = None
    """The name of the embedding model whose vectors the semantic retrievers searched with."""

    def text(self, item: str) -> str:
        """The candidate's stored text (title, body, code, path), as far as the retrievers returned it."""
        source = self.sources.get(item, {})
        return " ".join(str(source.get(name) or "") for name in TEXT_FIELDS)

    def texts(self) -> dict[str, str]:
        return {item: self.text(item) for item in self.sources}


LexicalOnly = Callable[[str], bool]
"""``lexical_only(query)``: whether this query is answered by the lexical retrievers alone."""


@dataclass(frozen=True)
class FusionTraits:
    """What a fusion method needs from the searcher before retrieval."""

    reads_texts: bool = False
    """It reads the candidates' texts (``FusionContext.text``): the retrievers return their bodies too."""
    lexical_only: LexicalOnly | None = None
    """For which queries the semantic retrievers need not run (their runs would be dropped anyway)."""


PLAIN = FusionTraits()
F = TypeVar("F", bound=Callable[..., FusionResult])
_ATTRIBUTE = "esbridge_fusion_traits"


def fusion_traits(*, reads_texts: bool = False, lexical_only: LexicalOnly | None = None) -> Callable[[F], F]:
    """Declare what the decorated fusion method needs (see ``FusionTraits``); plugins use it the same way."""

    def declare(method: F) -> F:
        setattr(method, _ATTRIBUTE, FusionTraits(reads_texts, lexical_only))
        return method

    return declare


def traits_of(method: Callable[..., FusionResult]) -> FusionTraits:
    traits = getattr(method, _ATTRIBUTE, PLAIN)
    return traits if isinstance(traits, FusionTraits) else PLAIN


def fuse(
    method: Callable[..., FusionResult],
    runs: Runs,
    *,
    weights: Mapping[str, float] | None,
    context: FusionContext,
    params: Mapping[str, Any],
) -> FusionResult:
    """Call ``method`` with the one signature, passing ``context`` when it takes one."""
    if _takes_context(method):
        result = method(runs, weights=weights, context=context, **params)
    else:
        result = method(runs, weights=weights, **params)
    if not isinstance(result, FusionResult):  # a plugin's mistake, named here rather than as a traceback later
        name = f"{getattr(method, '__module__', '?')}:{getattr(method, '__qualname__', repr(method))}"
        raise ConfigError(
            f"fusion method {name} returned {type(result).__name__}, not a FusionResult "
            "(esbridge.query.fusion.result.ranked(scores, contributions) builds one)"
        )
    return result


@functools.lru_cache(maxsize=128)
def _takes_context(method: Callable[..., FusionResult]) -> bool:
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return "context" in parameters and parameters["context"].kind is not inspect.Parameter.POSITIONAL_ONLY
