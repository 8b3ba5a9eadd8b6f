from __future__ import annotations

import pytest

from esbridge.query.fusion import QueryClassification, QueryKind, classify_query

IDENTIFIER, MIXED, NATURAL = QueryKind.IDENTIFIER, QueryKind.MIXED, QueryKind.NATURAL


@pytest.mark.parametrize(
    ("query", "identifier"),
    [
        ("D40", "D40"),
        ("PII-2024-0042", "PII-2024-0042"),
        ("30 CFR 75.1725", "30 CFR 75.1725"),
        ("30  CFR   75.1725", "30 CFR 75.1725"),
        ("42 U.S.C. 1983", "42 U.S.C. 1983"),
        ("26 USC § 501(c)(3)", "26 USC § 501(c)(3)"),
        ("os.path.join", "os.path.join"),
        ("os.path.join()", "os.path.join"),
        ("join()", "join"),
        ("getUserName", "getUserName"),
        ("HttpClient", "HttpClient"),
        ("user_name", "user_name"),
        ("MAX_SIZE", "MAX_SIZE"),
        ("__init__", "__init__"),
        ("x86_64", "x86_64"),
        ("v2.0", "v2.0"),
        ("COVID-19", "COVID-19"),
        ('"D40"', "D40"),
    ],
)
def test_bare_identifiers(query: str, identifier: str) -> None:
    reading = classify_query(query)
    assert reading.kind is IDENTIFIER
    assert reading.identifiers == (identifier,)


@pytest.mark.parametrize(
    ("query", "identifiers"),
    [
        ("what does D40 mean?", ("D40",)),
        ("how do I use os.path.join() in python", ("os.path.join",)),
        ("why is getUserName slow", ("getUserName",)),
        ("rules of 30 CFR 75.1725 for belt conveyors", ("30 CFR 75.1725",)),
        ("(see os.path.join).", ("os.path.join",)),
        ("D40's manual", ("D40",)),
        ("compare D40 and D41, then D40 again", ("D40", "D41")),
        ("COVID-19 symptoms", ("COVID-19",)),
    ],
)
def test_sentences_with_identifiers_are_mixed(query: str, identifiers: tuple[str, ...]) -> None:
    assert classify_query(query) == QueryClassification(MIXED, identifiers)


@pytest.mark.parametrize(
    "query",
    [
        "how to cook pasta",
        "what happened in 2024",
        "the 2nd amendment in the 1990s",
        "a 3.5mm jack at 10am",
        "e.g. the U.S. Ph.D. program",
        "NASA launch schedule",
        "state-of-the-art models",
        "meeting at 10:30",
        "",
        "  ?  ",
    ],
)
def test_natural_language(query: str) -> None:
    reading = classify_query(query)
    assert reading.kind is NATURAL
    assert reading.identifiers == ()


def test_several_bare_identifiers_are_still_an_identifier_query() -> None:
    reading = classify_query("PII-2024-0042 PII-2024-0043")
    assert reading.kind is IDENTIFIER
    assert reading.identifiers == ("PII-2024-0042", "PII-2024-0043")
