"""Category routing: keywords as whole words or phrases; the request's own choice first."""

from __future__ import annotations

import pytest

from esbridge.errors import ConfigError
from esbridge.query.models import Filters
from esbridge.query.routing import matched_keywords, route, routed_filters

CATEGORIES = {
    "security": ["cve", "exploit", "privilege escalation"],
    "ctf": ["ctf", "flag", "exploit"],
    "development": ["python", "unit test"],
}


def test_keywords_match_whole_words_and_phrases_in_any_case() -> None:
    assert matched_keywords("Is CVE-2024-3094 an exploit?", CATEGORIES["security"]) == ("cve", "exploit")
    assert matched_keywords("privilege  Escalation on linux", CATEGORIES["security"]) == ("privilege escalation",)
    assert matched_keywords("exploitation of cves", CATEGORIES["security"]) == ()  # no whole word
    assert matched_keywords("write a unit-test in Python", CATEGORIES["development"]) == ("python", "unit test")


def test_the_category_with_most_keywords_wins() -> None:
    chosen = route("ctf exploit to capture the flag", CATEGORIES, asked=None, filters=Filters())
    assert (chosen.category, chosen.keywords) == ("ctf", ("ctf", "flag", "exploit"))
    assert chosen.reason == "the query names ctf's keywords"
    assert routed_filters(Filters(), chosen).terms == {"category": ["ctf"]}


def test_a_tie_routes_nowhere_and_says_why() -> None:
    chosen = route("an exploit", CATEGORIES, asked=None, filters=Filters())
    assert chosen.category is None
    assert chosen.reason == "the query names keywords of ctf, security equally: not routed"
    assert routed_filters(Filters(), chosen) == Filters()


def test_no_keyword_no_route() -> None:
    assert route("sourdough bread", CATEGORIES, asked=None, filters=Filters()).category is None
    assert route("cve", {}, asked=None, filters=Filters()).reason == "no categories configured"


def test_the_request_names_its_category_or_filters_on_one_and_is_not_rerouted() -> None:
    asked = route("python exploit", CATEGORIES, asked="development", filters=Filters())
    assert (asked.category, asked.reason) == ("development", "the request names the category")
    own = Filters(terms={"category": ["security", "ctf"]})
    kept = route("python unit test", CATEGORIES, asked=None, filters=own)
    assert kept.category is None and routed_filters(own, kept) == own


def test_an_unknown_category_is_an_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown category 'crypto'; categories: ctf, development, security"):
        route("anything", CATEGORIES, asked="crypto", filters=Filters())
    with pytest.raises(ConfigError, match=r"none are configured"):
        route("anything", {}, asked="crypto", filters=Filters())


def test_routing_settings_without_keywords_are_refused_naming_the_category() -> None:
    from esbridge.config import load_settings

    assert load_settings(routing={"security": ["cve"]}).routing == {"security": ["cve"]}
    with pytest.raises(ConfigError, match=r"routing\.security: give it at least one keyword"):
        load_settings(routing={"security": []})
    with pytest.raises(ConfigError, match=r"routing\.ctf: give it at least one keyword, none of them blank"):
        load_settings(routing={"ctf": ["flag", " "]})
