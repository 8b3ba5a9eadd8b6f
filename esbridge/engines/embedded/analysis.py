"""Text analysis: the built-in analyzers run in tantivy (Rust), custom ones are emulated in Python.

The built-in analyzers are tantivy ``TextAnalyzer`` chains registered on every full-text index under the
names in ``NATIVE``; tantivy runs them while it indexes (in its own threads), and a query's text goes
through the same chain (``FieldAnalysis.analyze``), so index and query analysis cannot drift apart.
Emulations of the Lucene analyzers OpenSearch applies:

- ``english``: words (``WORDS``), lowercased, Lucene's English stop words removed, English (Porter2/Snowball)
  stemming, which also strips possessives (``ann's``: ``ann``). Lucene applies the original Porter
  algorithm; the stems differ for some words (``generalization``: Porter ``gener``, Porter2 ``general``;
  ``uses``: ``us`` and ``use``).
- ``standard``: words (``WORDS``) lowercased.
- ``simple``, ``whitespace``, ``keyword`` as in Lucene.
- custom analyzers, in Python, with ``standard``/``pattern``/``whitespace``/``keyword`` tokenizers and the
  ``lowercase``, ``asciifolding``, ``stop`` and ``word_delimiter(_graph)`` filters; the latter keeps
  identifiers whole and split, so ``getUserName``, ``user_name`` and ``os.path.join`` match by parts and whole.
  A filter option the emulation does not read (``catenate_words``, ``protected_words``, ...) is refused when an
  index is created (``check_options``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import tantivy

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
_LEGACY_WORDS = re.compile(r"\w+")
_LETTER = r"[\w--\d_--\p{Han}--\p{Hiragana}]"
_RUN = rf"{_LETTER}(?:[:\x{{B7}}.'\x{{2019}}]{_LETTER})*|\d(?:[,;.'\x{{2019}}]\d)*"
WORDS = (
    r"[\p{Han}\p{Hiragana}]"
    r"|\p{Extended_Pictographic}(?:[\x{FE0F}\p{Emoji_Modifier}]|\x{200D}\p{Extended_Pictographic})*"
    rf"|_*(?:{_RUN})(?:{_RUN}|_)*"
)
"""The tokens of Lucene's standard tokenizer (Unicode word breaks, UAX #29), as one regular expression for
tantivy's regex tokenizer: letters joined across one ``.``, ``'``, U+2019, ``:`` or U+00B7 between letters
(``os.path.join``, ``don't``, ``github.com``), digits across one ``.``, ``,``, ``;`` or quote between digits
(``75.1725``, ``1,000``), letters and digits and ``_`` together (``v1.2``, ``user_name``); each Han or
Hiragana character a token of its own; emoji sequences whole. It gives OpenSearch's standard tokens for 2,298
of 2,300 SciFact, CISI and Dendron texts (``\\w+`` gave 1,213); the other two have a stray emoji variation
selector as a token of its own (docs/embedded-differences.md).

tantivy's regex crate is built without its DFAs, so every token runs through the Pike VM, whose cost is the
number of regex states alive at each byte: written this way (a letter or digit continues through the one outer
loop, a separator only with the letter or digit after it) it gives the tokens, offsets and positions of the
first form of analysis version 2 with about 12% fewer instructions a token (docs/benchmarks.md)."""
_CASE_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")


class UnsupportedAnalysis(ValueError):
    """An analyzer, tokenizer or token filter the embedded engine cannot emulate."""


@dataclass(frozen=True)
class FieldAnalysis:
    analyze: Analyzer
    native: str | None = None
    """The name of the tantivy analyzer that does the same while indexing; None: tokens come from ``analyze``."""


def _chain(tokenizer: tantivy.Tokenizer, *filters: tantivy.Filter) -> tantivy.TextAnalyzer:
    builder = tantivy.TextAnalyzerBuilder(tokenizer)
    for step in filters:
        builder = builder.filter(step)
    return builder.build()


def _english(words: str) -> tantivy.TextAnalyzer:
    return _chain(
        tantivy.Tokenizer.regex(words),
        tantivy.Filter.lowercase(),
        tantivy.Filter.custom_stopword(sorted(ENGLISH_STOP_WORDS)),
        tantivy.Filter.stemmer("english"),
    )


ANALYSIS_VERSION = 4
"""The word split of indices created now; an index keeps the one it was created with (its settings'
``analysis_version``, 1 when absent) until ``esbridge index reindex`` copies it into a new one, as analysis
is fixed at creation on OpenSearch. 1: ``\\w+`` runs; 2: ``WORDS``; 3: custom analyzers as Lucene runs them too
(a ``pattern`` tokenizer's ``\\w``, ``\\d`` and ``\\s`` are ASCII, as in Java; ``word_delimiter`` splits as
Lucene's ``WordDelimiterIterator``, ``split_on_numerics`` included); 4: a ``stop`` filter's English stop words
match by case as in Lucene (``The`` stays before a ``lowercase``) unless it names ``_english_`` with
``ignore_case``."""

_VERSIONED = ("english", "standard")
"""The built-in analyzers whose words depend on the analysis version; version 1 keeps their first names, so the
layouts (and full-text directories) of indices created before are unchanged."""

NATIVE: Mapping[str, tantivy.TextAnalyzer] = {
    "esbridge_english": _english(r"\w+"),
    "esbridge_standard": _chain(tantivy.Tokenizer.regex(r"\w+"), tantivy.Filter.lowercase()),
    "esbridge_english_2": _english(WORDS),
    "esbridge_standard_2": _chain(tantivy.Tokenizer.regex(WORDS), tantivy.Filter.lowercase()),
    "esbridge_simple": _chain(tantivy.Tokenizer.regex(r"[^\W\d_]+"), tantivy.Filter.lowercase()),
    "esbridge_whitespace": _chain(tantivy.Tokenizer.whitespace()),
    "esbridge_keyword": _chain(tantivy.Tokenizer.raw()),
}

_STANDARD_TOKENS = _chain(tantivy.Tokenizer.regex(WORDS))


def _native(name: str) -> FieldAnalysis:
    analyzer = NATIVE[name]

    def analyze(text: str) -> list[str]:
        tokens: list[str] = analyzer.analyze(text)
        return tokens

    return FieldAnalysis(analyze, name)


def _whitespace(text: str) -> list[str]:
    return text.split()


BUILTINS: Mapping[int, Mapping[str, FieldAnalysis]] = {
    version: {
        name: _native(f"esbridge_{name}_2" if name in _VERSIONED and version > 1 else f"esbridge_{name}")
        for name in ("english", "standard", "simple", "whitespace", "keyword")
    }
    for version in range(1, ANALYSIS_VERSION + 1)
}
BUILTIN = BUILTINS[ANALYSIS_VERSION]
"""The built-in analyzers of indices created now."""


def _tokenizer(name: str, definitions: Mapping[str, Any], version: int) -> Callable[[str], list[str]]:
    spec = definitions.get(name, {"type": name})
    kind = spec.get("type")
    if kind == "standard":
        return _STANDARD_TOKENS.analyze if version > 1 else _LEGACY_WORDS.findall
    if kind == "whitespace":
        return _whitespace
    if kind == "keyword":
        return lambda text: [text]
    if kind == "pattern":
        if spec.get("group", -1) != -1 or spec.get("flags"):
            raise UnsupportedAnalysis(f"pattern tokenizer {name!r}: only 'pattern' is supported")
        # Java's \w, \d and \s are ASCII (no UNICODE_CHARACTER_CLASS): "café" splits at the é on a cluster.
        pattern = re.compile(str(spec.get("pattern", r"\W+")), re.ASCII if version > 2 else 0)
        return lambda text: [token for token in pattern.split(text) if token]
    raise UnsupportedAnalysis(f"tokenizer {name!r} of type {kind!r}")


def _identifier_parts(token: str, *, case: bool, original: bool) -> list[str]:
    runs = [run for run in re.split(r"[^0-9A-Za-z\u00C0-\uFFFF]+", token) if run]
    parts = [part for run in runs for part in (_CASE_PARTS.findall(run) if case else [run])]
    if original and parts != [token]:
        return [token, *parts]
    return parts


_LOWER, _UPPER, _DIGIT, _DELIMITER = 1, 2, 4, 8
_ALPHA = _LOWER | _UPPER
_CHAR_TYPES = {"Lu": _UPPER, "Ll": _LOWER, "Nd": _DIGIT, "Nl": _DIGIT, "No": _DIGIT, "Cs": _ALPHA | _DIGIT}
_CHAR_TYPES.update(dict.fromkeys(("Lt", "Lm", "Lo", "Mn", "Me", "Mc"), _ALPHA))


def _char_type(char: str) -> int:
    """``WordDelimiterIterator.getType``; Java sees a character beyond the BMP as two surrogates, which never split."""
    return _ALPHA | _DIGIT if ord(char) > 0xFFFF else _CHAR_TYPES.get(unicodedata.category(char), _DELIMITER)


def _is_break(last: int, kind: int, *, case: bool, numerics: bool) -> bool:
    """``WordDelimiterIterator.isBreak``: only lower to upper splits letters (``HTTPServer`` stays whole)."""
    if kind & last or (last & _UPPER and kind & _ALPHA) or (not case and last & _ALPHA and kind & _ALPHA):
        return False
    return numerics or not ((last & _ALPHA and kind & _DIGIT) or (last & _DIGIT and kind & _ALPHA))


def _possessive(token: str, types: list[int], end: int) -> bool:
    """``WordDelimiterIterator.endsWithPossessive``: ``'s`` or ``'S`` after a letter, ending the token or a part."""
    after = end + 2
    return (
        token[end : end + 1] == "'"
        and token[end + 1 : after] in ("s", "S")
        and bool(types[end - 1] & _ALPHA)
        and (after == len(token) or bool(types[after] & _DELIMITER))
    )


def _lucene_parts(token: str, *, case: bool, numerics: bool, original: bool, possessive: bool = True) -> list[str]:
    """The tokens Lucene's ``word_delimiter(_graph)`` makes of ``token`` (word and number parts, no catenation;
    ``stem_english_possessive`` drops the ``'s`` after a word part)."""
    types = [_char_type(char) for char in token]
    spans: list[tuple[int, int]] = []
    end = 0
    while True:
        start = end + 2 if possessive and spans and _possessive(token, types, end) else end
        while start < len(token) and types[start] & _DELIMITER:
            start += 1
        if start >= len(token):
            break
        end = start + 1
        while end < len(token) and not _is_break(types[end - 1], types[end], case=case, numerics=numerics):
            end += 1
        spans.append((start, end))
    if spans == [(0, len(token))] or (not spans and original):
        return [token]
    parts = [token[start:end] for start, end in spans]
    return [token, *parts] if original else parts


def _flag(spec: Mapping[str, Any], key: str, default: bool) -> bool:
    """A boolean filter option, which settings read back from a cluster hold as the strings "true" and "false"."""
    value = spec.get(key, default)
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def _token_filter(name: str, definitions: Mapping[str, Any], version: int) -> Callable[[list[str]], list[str]]:
    spec = definitions.get(name, {"type": name})
    kind = spec.get("type")
    if kind == "lowercase":
        return lambda tokens: [token.lower() for token in tokens]
    if kind == "asciifolding":
        return lambda tokens: [
            unicodedata.normalize("NFKD", token).encode("ascii", "ignore").decode() or token for token in tokens
        ]
    if kind == "stop" and spec.get("stopwords", "_english_") == "_english_":
        # Lucene's English set is matched as it is written (lowercase): `The` stays, unless the filter names the
        # set itself with ignore_case (ignore_case alone does not apply to the default set).
        if version > 3 and not ("stopwords" in spec and _flag(spec, "ignore_case", False)):
            return lambda tokens: [token for token in tokens if token not in ENGLISH_STOP_WORDS]
        return lambda tokens: [token for token in tokens if token.lower() not in ENGLISH_STOP_WORDS]
    if kind in ("word_delimiter", "word_delimiter_graph") and version > 2:
        case, original = _flag(spec, "split_on_case_change", True), _flag(spec, "preserve_original", False)
        numerics, possessive = _flag(spec, "split_on_numerics", True), _flag(spec, "stem_english_possessive", True)
        return lambda tokens: [
            part
            for token in tokens
            for part in _lucene_parts(token, case=case, numerics=numerics, original=original, possessive=possessive)
        ]
    if kind in ("word_delimiter", "word_delimiter_graph"):
        case, original = bool(spec.get("split_on_case_change", True)), bool(spec.get("preserve_original", False))
        return lambda tokens: [
            part for token in tokens for part in _identifier_parts(token, case=case, original=original)
        ]
    raise UnsupportedAnalysis(f"token filter {name!r} of type {kind!r}")


_WORD_PARTS_ONLY: Mapping[str, Any] = {
    "generate_word_parts": True,
    "generate_number_parts": True,
    "catenate_words": False,
    "catenate_numbers": False,
    "catenate_all": False,
    "protected_words": None,
    "protected_words_path": None,
    "type_table": None,
    "type_table_path": None,
}
_UNREAD_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "word_delimiter": _WORD_PARTS_ONLY,
    "word_delimiter_graph": _WORD_PARTS_ONLY,
    "lowercase": {"language": None},
    "asciifolding": {"preserve_original": False},
    "stop": {"stopwords_path": None, "remove_trailing": True},
}
"""Options of the emulated token filters that the emulation does not read, with the value (Lucene's default) at
which they change nothing. (``adjust_offsets`` moves offsets only; ``ignore_keywords`` needs a keyword marker,
which no filter here sets.)"""


def _neutral(value: Any, default: Any) -> bool:
    if isinstance(default, bool):
        return (value.strip().lower() == "true" if isinstance(value, str) else value) == default
    return value is None or value == [] or value == ""


def filter_names(spec: Mapping[str, Any], key: str) -> list[Any]:
    """An analyzer's ``filter`` or ``char_filter``: a list of names, or one string of names separated by commas, as
    OpenSearch reads it (``"lowercase,asciifolding"``; ``""`` for none)."""
    names = spec.get(key, [])
    if isinstance(names, str):
        return [name.strip() for name in names.split(",") if name.strip()]
    if not isinstance(names, list):
        raise UnsupportedAnalysis(f"{key} {names!r}: a list of names or a string of them is needed")
    return names


def check_options(analyzer: str | None, analysis: Mapping[str, Any]) -> None:
    """Refuse (UnsupportedAnalysis, naming it) a token filter option of ``analyzer`` that the emulation does not
    read and that would change the tokens a cluster makes (``catenate_words``, ``protected_words``, ...), so that
    an index is refused at creation rather than analysed otherwise than on a cluster."""
    spec = analysis.get("analyzer", {}).get(analyzer or "standard")
    if not isinstance(spec, Mapping):
        return
    definitions = analysis.get("filter", {})
    for name in filter_names(spec, "filter"):
        found = definitions.get(name) if isinstance(name, str) and isinstance(definitions, Mapping) else None
        if not isinstance(found, Mapping):
            continue  # (a built-in filter by its name: Lucene's defaults)
        for option, default in _UNREAD_OPTIONS.get(str(found.get("type")), {}).items():
            if option in found and not _neutral(found[option], default):
                raise UnsupportedAnalysis(
                    f"token filter {name!r} of type {found['type']!r}: option {option!r} ({found[option]!r}) is not "
                    "implemented by the embedded engine"
                )


def check_defaults(analyzer: str | None, analysis: Mapping[str, Any]) -> None:
    """Refuse (UnsupportedAnalysis) the index-wide analyzers a cluster would apply to a text field with ``analyzer``
    and the embedded engine would not: ``default`` where the field names none, ``default_search`` always (a
    cluster searches with it before the field's analyzer)."""
    defined = analysis.get("analyzer", {})
    if not isinstance(defined, Mapping):
        return
    if "default_search" in defined:
        raise UnsupportedAnalysis(
            "the index's analysis.analyzer.default_search is not applied by the embedded engine (it searches a field "
            "with the field's analyzer)"
        )
    if analyzer is None and "default" in defined:
        raise UnsupportedAnalysis(
            "the index's analysis.analyzer.default is not applied by the embedded engine: name the analyzer on the "
            'field ("analyzer": "default")'
        )


def _custom(name: str, spec: Mapping[str, Any], analysis: Mapping[str, Any], version: int) -> FieldAnalysis:
    if spec.get("type", "custom") != "custom":
        raise UnsupportedAnalysis(f"analyzer {name!r} of type {spec.get('type')!r}")
    if filter_names(spec, "char_filter"):
        raise UnsupportedAnalysis(f"analyzer {name!r}: char filters")
    tokenize = _tokenizer(str(spec.get("tokenizer", "standard")), analysis.get("tokenizer", {}), version)
    filters = [_token_filter(str(f), analysis.get("filter", {}), version) for f in filter_names(spec, "filter")]

    def analyze(text: str) -> list[str]:
        tokens = tokenize(text)
        for token_filter in filters:
            tokens = token_filter(tokens)
        return tokens

    return FieldAnalysis(analyze)


def field_analysis(analyzer: str | None, analysis: Mapping[str, Any], version: int = ANALYSIS_VERSION) -> FieldAnalysis:
    """How a text field with ``analyzer`` (defined in the index's ``analysis`` settings or built in) is analysed
    in an index of analysis ``version``."""
    if version not in BUILTINS:
        raise UnsupportedAnalysis(f"analysis_version {version!r} (this esbridge knows {sorted(BUILTINS)})")
    name = analyzer or "standard"
    custom = analysis.get("analyzer", {})
    if name in custom:
        return _custom(name, custom[name], analysis, version)
    if name in BUILTINS[version]:
        return BUILTINS[version][name]
    raise UnsupportedAnalysis(f"analyzer {name!r}")
