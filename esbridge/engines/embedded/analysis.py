"""Text analysis emulated in Python, feeding SQLite FTS5.

FTS5 has one tokenizer per table, so each index has up to two full-text tables: ``en`` (FTS5's
``porter`` stemmer over ``unicode61``) for English-analysed fields and ``ex`` (plain ``unicode61``)
for everything else. Python splits and filters the text first (the analyzer's tokenizer and token
filters), then FTS5 lowercases and, in ``en``, stems. Approximations of the Lucene analyzers:

- ``english``: words (``\\w+``), Lucene's English stop words removed, Porter stemming (FTS5's
  Porter, not Lucene's Porter2-ish ``porter_stem`` + possessive filter; stems may differ at the edges).
- ``standard``: words (``\\w+``) lowercased; Unicode word-break rules (UAX #29) are not followed exactly.
- custom analyzers with ``standard``/``pattern``/``whitespace``/``keyword`` tokenizers and the
  ``lowercase``, ``asciifolding``, ``stop`` and ``word_delimiter(_graph)`` filters; the latter keeps
  identifiers whole and split, so ``getUserName``, ``user_name`` and ``os.path.join`` match by parts and whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Table = Literal["en", "ex"]
Analyzer = Callable[[str], list[str]]

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
# What the ``ex`` table's tokenizer keeps inside a token, so code identifiers stay whole.
TOKEN_CHARS = "._$-"  # noqa: S105 (not a password)
_WORDS = re.compile(r"\w+")
_NOT_TOKEN = re.compile(r"[^\w.$\-]+")
_CASE_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")


class UnsupportedAnalysis(ValueError):
    """An analyzer, tokenizer or token filter the embedded engine cannot emulate."""


@dataclass(frozen=True)
class FieldAnalysis:
    table: Table
    analyze: Analyzer


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORDS.findall(text)]


def _english(text: str) -> list[str]:
    return [word for word in _words(text) if word not in ENGLISH_STOP_WORDS]


def _simple(text: str) -> list[str]:
    return [word.lower() for word in re.findall(r"[^\W\d_]+", text)]


def _whitespace(text: str) -> list[str]:
    return text.split()


BUILTIN: Mapping[str, FieldAnalysis] = {
    "english": FieldAnalysis("en", _english),
    "standard": FieldAnalysis("ex", _words),
    "simple": FieldAnalysis("ex", _simple),
    "whitespace": FieldAnalysis("ex", _whitespace),
    "keyword": FieldAnalysis("ex", lambda text: [text]),
}


def _tokenizer(name: str, definitions: Mapping[str, Any]) -> Callable[[str], list[str]]:
    spec = definitions.get(name, {"type": name})
    kind = spec.get("type")
    if kind == "standard":
        return lambda text: _WORDS.findall(text)
    if kind == "whitespace":
        return _whitespace
    if kind == "keyword":
        return lambda text: [text]
    if kind == "pattern":
        if spec.get("group", -1) != -1 or spec.get("flags"):
            raise UnsupportedAnalysis(f"pattern tokenizer {name!r}: only 'pattern' is supported")
        pattern = re.compile(str(spec.get("pattern", r"\W+")))
        return lambda text: [token for token in pattern.split(text) if token]
    raise UnsupportedAnalysis(f"tokenizer {name!r} of type {kind!r}")


def _identifier_parts(token: str, *, case: bool, original: bool) -> list[str]:
    runs = [run for run in re.split(r"[^0-9A-Za-z\u00C0-\uFFFF]+", token) if run]
    parts = [part for run in runs for part in (_CASE_PARTS.findall(run) if case else [run])]
    if original and parts != [token]:
        return [token, *parts]
    return parts


def _token_filter(name: str, definitions: Mapping[str, Any]) -> Callable[[list[str]], list[str]]:
    spec = definitions.get(name, {"type": name})
    kind = spec.get("type")
    if kind == "lowercase":
        return lambda tokens: [token.lower() for token in tokens]
    if kind == "asciifolding":
        return lambda tokens: [
            unicodedata.normalize("NFKD", token).encode("ascii", "ignore").decode() or token for token in tokens
        ]
    if kind == "stop" and spec.get("stopwords", "_english_") == "_english_":
        return lambda tokens: [token for token in tokens if token.lower() not in ENGLISH_STOP_WORDS]
    if kind in ("word_delimiter", "word_delimiter_graph"):
        case, original = bool(spec.get("split_on_case_change", True)), bool(spec.get("preserve_original", False))
        return lambda tokens: [
            part for token in tokens for part in _identifier_parts(token, case=case, original=original)
        ]
    raise UnsupportedAnalysis(f"token filter {name!r} of type {kind!r}")


def _custom(name: str, spec: Mapping[str, Any], analysis: Mapping[str, Any]) -> FieldAnalysis:
    if spec.get("type", "custom") != "custom":
        raise UnsupportedAnalysis(f"analyzer {name!r} of type {spec.get('type')!r}")
    if spec.get("char_filter"):
        raise UnsupportedAnalysis(f"analyzer {name!r}: char filters")
    tokenize = _tokenizer(str(spec.get("tokenizer", "standard")), analysis.get("tokenizer", {}))
    filters = [_token_filter(str(f), analysis.get("filter", {})) for f in spec.get("filter", [])]

    def analyze(text: str) -> list[str]:
        tokens = tokenize(text)
        for token_filter in filters:
            tokens = token_filter(tokens)
        return tokens

    return FieldAnalysis("ex", analyze)


def field_analysis(analyzer: str | None, analysis: Mapping[str, Any]) -> FieldAnalysis:
    """How a text field with ``analyzer`` (defined in the index's ``analysis`` settings or built in) is analysed."""
    name = analyzer or "standard"
    custom = analysis.get("analyzer", {})
    if name in custom:
        return _custom(name, custom[name], analysis)
    if name in BUILTIN:
        return BUILTIN[name]
    raise UnsupportedAnalysis(f"analyzer {name!r}")


def fts_text(tokens: Sequence[str]) -> str:
    """Tokens as text the FTS5 tokenizer splits back into the same tokens."""
    return " ".join(part for token in tokens for part in _NOT_TOKEN.split(token) if part)


def fts_terms(tokens: Sequence[str], operator: str = "or") -> str | None:
    """An FTS5 query expression matching any (or all) of ``tokens``; None when there are none."""
    terms = list(dict.fromkeys(part for token in tokens for part in _NOT_TOKEN.split(token) if part))
    if not terms:
        return None
    joiner = " AND " if operator == "and" else " OR "
    return "(" + joiner.join('"' + term.replace('"', '""') + '"' for term in terms) + ")"
