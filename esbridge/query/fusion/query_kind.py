"""Telling identifier-like queries (codes, citations, function names) from natural-language ones.

An identifier is a token, or for legal citations a short run of tokens, that is meant to be matched
verbatim, which BM25 does and dense embeddings do poorly:

* codes mixing letters and digits: ``D40``, ``PII-2024-0042``, ``COVID-19``, ``x86_64``, ``v2.0``;
  not ordinals or quantities written in lowercase (``2nd``, ``1990s``, ``10am``, ``3.5mm``);
* citations ``<title> <CAPITALS> <section>``: ``30 CFR 75.1725``, ``42 U.S.C. 1983``, ``26 USC § 501(c)(3)``;
* dotted names with parts of two or more characters: ``os.path.join``, ``np.array``
  (not ``e.g.``, ``U.S.`` or ``Ph.D.``);
* camelCase and PascalCase with an inner capital: ``getUserName``, ``HttpClient``, ``iPhone``;
* snake_case and dunders: ``user_name``, ``MAX_SIZE``, ``__init__``;
* calls: ``join()``, ``os.path.join()`` (the identifier is given without the parentheses).

Plain words, numbers (``2024``, ``3.5``) and all-capital words (``NASA``) are natural language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class QueryKind(str, Enum):
    NATURAL = "natural"
    """No identifier: natural language (or empty)."""
    MIXED = "mixed"
    """Words and at least one identifier: ``what does D40 mean``."""
    IDENTIFIER = "identifier"
    """Identifiers only: ``PII-2024-0042``, ``os.path.join``, ``30 CFR 75.1725``."""


@dataclass(frozen=True)
class QueryClassification:
    kind: QueryKind
    identifiers: tuple[str, ...] = ()
    """The identifiers found, in query order, each once."""


_CITATION = re.compile(
    r"(?<!\w)\d+\s+(?:[A-Z]\.?){2,6}\s+(?:§+\s*)?\d+(?:[.\-]\d+)*[a-z]?(?:\([0-9A-Za-z]+\))*(?!\w)", re.ASCII
)
_IDENTIFIER_CHARS = re.compile(r"[\w.\-/:#]+", re.ASCII)
_CODE = re.compile(r"[A-Za-z0-9]+(?:[-_/.:#][A-Za-z0-9]+)*")
_QUANTITY = re.compile(r"\d+(?:[.,]\d+)?[a-z]{1,3}")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+", re.ASCII)
_CAMEL = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]")
_SNAKE = re.compile(r"_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*|__\w+__", re.ASCII)
_CALL = re.compile(r"[A-Za-z_][\w.]*\(\)", re.ASCII)
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
_ALNUM = re.compile(r"\w")

_LEADING = "\"'\u201c\u2018\u00ab([{<"
_TRAILING = "\"'\u201d\u2019\u00bb.,;:!?"
_CLOSING = ")]}>"


def classify_query(text: str) -> QueryClassification:
    """Whether ``text`` is identifiers only, words with identifiers, or natural language; and which identifiers."""
    identifiers: list[str] = []
    words = 0
    for citation in _CITATION.finditer(text):
        identifiers.append(" ".join(citation.group().split()))
    for token in _CITATION.sub(" ", text).split():
        cleaned = _clean(token)
        identifier = _identifier(cleaned)
        if identifier:
            identifiers.append(identifier)
        elif _ALNUM.search(cleaned):
            words += 1
    found = tuple(dict.fromkeys(identifiers))
    if not found:
        return QueryClassification(QueryKind.NATURAL)
    return QueryClassification(QueryKind.MIXED if words else QueryKind.IDENTIFIER, found)


def _clean(token: str) -> str:
    token = token.lstrip(_LEADING).rstrip(_TRAILING)
    for suffix in ("'s", "\u2019s"):
        token = token.removesuffix(suffix)
    if token.endswith("()"):
        return token
    return token.rstrip(_CLOSING).rstrip(_TRAILING)


def _identifier(token: str) -> str | None:
    if _CALL.fullmatch(token):
        return token[:-2]
    if not _IDENTIFIER_CHARS.fullmatch(token):
        return None
    if _DOTTED.fullmatch(token) and all(len(part) >= 2 for part in token.split(".")):
        return token
    if _SNAKE.fullmatch(token) and _LETTER.search(token):
        return token
    if _CAMEL.fullmatch(token) and _INNER_CAPITAL.search(token):
        return token
    is_code = _CODE.fullmatch(token) and _LETTER.search(token) and _DIGIT.search(token)
    if is_code and not _QUANTITY.fullmatch(token):
        return token
    return None
