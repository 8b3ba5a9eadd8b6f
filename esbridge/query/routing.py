"""Category routing: a query that names a category's keywords is searched within that category.

``[routing]`` maps each category to its keywords (``security = ["cve", "exploit", "vulnerability"]``).
A keyword matches as a whole word, or a whole phrase of words, in any case. The category with the most
distinct keywords in the query wins; a tie between categories routes nowhere (the reason says so). A
request that names a category itself, or filters on ``category``, is never re-routed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from esbridge.errors import ConfigError
from esbridge.query.models import Filters, RoutingDetails, SearchRequest

Categories = Mapping[str, Sequence[str]]
"""category -> keywords"""


@dataclass(frozen=True)
class Route:
    """Where a query was routed and why."""

    category: str | None
    reason: str
    keywords: tuple[str, ...] = field(default_factory=tuple)
    """the category's keywords the query holds"""


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\w+", text.casefold()))


def matched_keywords(query: str, keywords: Sequence[str]) -> tuple[str, ...]:
    """The keywords ``query`` holds as whole words or phrases, in the order configured."""
    words = _words(query)
    padded = f" {' '.join(words)} "
    return tuple(keyword for keyword in keywords if (phrase := " ".join(_words(keyword))) and f" {phrase} " in padded)


def route(query: str, categories: Categories, *, asked: str | None, filters: Filters) -> Route:
    """The category this query is searched in (None: all), from the request's own choice or the keywords.

    An ``asked`` category that is not configured is a ``ConfigError`` listing the configured ones.
    """
    if asked is not None:
        if asked not in categories:
            known = ", ".join(sorted(categories)) or "none are configured ([routing] in the settings)"
            raise ConfigError(f"unknown category {asked!r}; categories: {known}")
        return Route(asked, "the request names the category")
    if "category" in filters.terms:
        return Route(None, "the request filters on category itself")
    found = {name: hits for name, keywords in categories.items() if (hits := matched_keywords(query, keywords))}
    if not found:
        return Route(None, "no category's keywords in the query" if categories else "no categories configured")
    best = max(len(hits) for hits in found.values())
    leaders = sorted(name for name, hits in found.items() if len(hits) == best)
    if len(leaders) > 1:
        return Route(None, f"the query names keywords of {', '.join(leaders)} equally: not routed")
    category = leaders[0]
    return Route(category, f"the query names {category}'s keywords", found[category])


def routed_filters(filters: Filters, route: Route) -> Filters:
    """``filters`` narrowed to the route's category (unchanged when there is none)."""
    if route.category is None:
        return filters
    return filters.model_copy(update={"terms": {**filters.terms, "category": [route.category]}})


def routed_request(request: SearchRequest, categories: Categories) -> tuple[SearchRequest, RoutingDetails | None]:
    """The request limited to the category it names or whose keywords its query holds, and what the response
    says of it (None: no categories, and none asked for)."""
    if not categories and request.category is None:
        return request, None
    chosen = route(request.query, categories, asked=request.category, filters=request.filters)
    details = RoutingDetails(category=chosen.category, reason=chosen.reason, keywords=list(chosen.keywords))
    return request.model_copy(update={"filters": routed_filters(request.filters, chosen)}), details
