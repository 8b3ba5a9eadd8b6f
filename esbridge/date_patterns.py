"""Custom Java date patterns in a date ``format`` (``dd/MM/yyyy``, ``EEE, dd MMM yyyy HH:mm:ss Z``), read as
OpenSearch reads them: ``java.time``'s pattern letters, parsed strictly and case-sensitively. The embedded engine
reads a date field's values and a range's bounds with them (``embedded.dates``), and recency an attached index's
stored dates (``esbridge.query.engine_dates``), so both read a value alike.

The letters read: ``y`` (year of era: 1 or more, no sign), ``u`` (year: a sign allowed), ``M``, ``d``, ``H``,
``m``, ``s`` (one letter: one or more digits; two: exactly two), ``S`` (a fraction of exactly as many digits as
letters), ``X`` (``Z`` or an offset: ``+HH`` or ``+HHmm``, ``+HHmm``, ``+HH:mm`` for one, two, three letters) and
``Z`` (``+HHmm``, one to three letters). ``yy`` and ``uu`` are two digits, years 2000 to 2099; ``yyyy`` and more
letters take exactly that many digits, or more after a ``+``; ``uuuu`` takes a ``-`` too. Text in single quotes
(``''`` for a quote) and any character other than a letter is matched as written.

Names are English, as the clusters' ROOT locale writes them, and matched case-sensitively: ``MMM`` a month's
(``Jan`` ... ``Dec``), ``E``, ``EE`` and ``EEE`` a day's (``Mon`` ... ``Sun``), which both clusters take whatever
day the date falls on, so it is matched and not checked. ``MMMM`` and ``EEEE`` are refused: OpenSearch 3.6 reads
them as the short names (``Jan``, ``Tue``), Elasticsearch as the full ones (``January``, ``Tuesday``).

An optional section (``yyyy-MM-dd['T'HH:mm]``, nested too) is read whole or not at all: when it does not match
all through, the value is read on without it, and once it has matched it is not given back, as ``java.time``
reads it (``2024-05-01T10`` is refused by that pattern, not read as the day).

The fields given must be the leading ones of year, month, day, hour, minute, second, fraction, with or without
each optional section (a pattern of a year and a day only names no date the engine reads). Any other letter, a
field named twice, a number of varying width right after another number (``yyyyM``: ``java.time`` splits such
digits in a way the engine does not reproduce) or an optional section that begins with a number right after one
is refused, naming the pattern and what it cannot read. A varying number before fixed ones (``yyyyMMdd``) leaves
them their digits, as ``java.time`` does.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_ORDER = ("year", "month", "day", "hour", "minute", "second", "fraction")
_FIELDS = {"M": "month", "d": "day", "H": "hour", "m": "minute", "s": "second"}
_OFFSETS = {
    ("X", 1): r"Z|[+-][0-9]{2}(?:[0-9]{2})?",
    ("X", 2): r"Z|[+-][0-9]{4}",
    ("X", 3): r"Z|[+-][0-9]{2}:[0-9]{2}",
    ("Z", 1): r"[+-][0-9]{4}",
    ("Z", 2): r"[+-][0-9]{4}",
    ("Z", 3): r"[+-][0-9]{4}",
}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_FULL_NAMES = "OpenSearch reads it as the short name (Jan, Tue), Elasticsearch as the full one (January, Tuesday)"
_MOST_COMBINATIONS = 256
READ_LETTERS = "y, u, M (MMM: Jan), d, E (Mon), H, m, s, S, X and Z, with optional sections [...]"


class PatternError(ValueError):
    """A pattern esbridge does not read."""


@dataclass(frozen=True)
class _Token:
    group: str | None  # the regular expression's group (None: matched, not kept)
    field: str | None  # the field it names (``year`` for any year; ``day_of_week``: none of _ORDER)
    expression: str
    numeric: bool
    varying: bool


def _year(letter: str, count: int) -> _Token:
    if count == 2:
        return _Token("short_year", "year", "[0-9]{2}", True, False)
    group, sign = ("era_year", "") if letter == "y" else ("year", "-?")
    if count < 4:
        return _Token(group, "year", f"{sign}[0-9]{{{count},9}}", True, True)
    negative = "" if letter == "y" else rf"|-[0-9]{{{count},9}}"
    return _Token(group, "year", rf"\+[0-9]{{{count + 1},9}}{negative}|[0-9]{{{count}}}", True, True)


def _field(letter: str, count: int, pattern: str) -> _Token:
    """What a run of ``count`` pattern letters matches."""
    letters = letter * count
    if letter in "yu" and count <= 9:
        return _year(letter, count)
    if letter in _FIELDS and count <= 2:
        varying = count == 1
        return _Token(_FIELDS[letter], _FIELDS[letter], "[0-9]{1,19}" if varying else "[0-9]{2}", True, varying)
    if letters == "MMM":
        return _Token("month_name", "month", "|".join(MONTHS), False, False)
    if letter == "E" and count <= 3:
        return _Token(None, "day_of_week", _DAYS, False, False)
    if letters in ("MMMM", "EEEE"):
        raise PatternError(f"pattern [{pattern}]: the letters [{letters}] are not read: {_FULL_NAMES}")
    if letter == "S" and count <= 9:
        return _Token("fraction", "fraction", f"[0-9]{{{count}}}", True, False)
    if (letter, count) in _OFFSETS:
        return _Token("zone", "zone", _OFFSETS[letter, count], False, False)
    raise PatternError(f"pattern [{pattern}]: the letters [{letters}] are not read")


def _quoted(pattern: str, start: int) -> tuple[str, int]:
    """(the text, the index after it) of the quoted text at ``start``: ``''`` is a quote, inside quotes or out."""
    if pattern[start + 1 : start + 2] == "'":
        return "'", start + 2
    text, at = "", start + 1
    while at < len(pattern):
        if pattern[at] != "'":
            text, at = text + pattern[at], at + 1
        elif pattern[at + 1 : at + 2] == "'":
            text, at = text + "'", at + 2
        else:
            return text, at + 1
    raise PatternError(f"pattern [{pattern}]: a quote is not closed")


class _Reader:
    """Reads a pattern into a regular expression, and the sets of fields its matches may name."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.at = 0
        self.named: list[str] = []
        self.numeric_before = False
        self.section_starts = False

    def section(self, nested: bool) -> tuple[str, set[frozenset[str]]]:
        """The expression up to the end of the pattern or of the section, and the field sets a match names."""
        pattern, parts, combinations = self.pattern, [], {frozenset[str]()}
        while self.at < len(pattern):
            char = pattern[self.at]
            if char.isascii() and char.isalpha():
                count = len(pattern) - self.at - len(pattern[self.at :].lstrip(char))
                parts.append(self.token(_field(char, count, pattern), char * count))
                if (field := self.named[-1]) != "day_of_week":
                    combinations = {named | {field} for named in combinations}
                self.at += count
                continue
            if char == "[":
                self.at, self.section_starts, before = self.at + 1, True, self.numeric_before
                inner, optional = self.section(nested=True)
                parts.append(f"(?>(?:{inner})?)")
                combinations = {named | more for named in combinations for more in (frozenset(), *optional)}
                if len(combinations) > _MOST_COMBINATIONS:
                    raise PatternError(f"pattern [{pattern}]: too many optional sections")
                self.numeric_before = self.numeric_before or before
                continue
            if char == "]":
                if not nested:
                    raise PatternError(f"pattern [{pattern}]: []] closes no optional section")
                self.at += 1
                return "".join(parts), combinations
            if char == "'":
                text, self.at = _quoted(pattern, self.at)
                parts.append(re.escape(text))
            elif char in "{}#":
                raise PatternError(f"pattern [{pattern}]: [{char}] is not read")
            else:
                parts.append(re.escape(char))
                self.at += 1
            self.numeric_before = self.section_starts = False
        if nested:
            raise PatternError(f"pattern [{pattern}]: an optional section is not closed")
        return "".join(parts), combinations

    def token(self, token: _Token, letters: str) -> str:
        if token.numeric and self.numeric_before and token.varying:
            raise PatternError(f"pattern [{self.pattern}]: [{letters}] varies in width right after a number")
        if token.numeric and self.numeric_before and self.section_starts:
            raise PatternError(f"pattern [{self.pattern}]: [{letters}] begins an optional section right after a number")
        if token.field in self.named:
            raise PatternError(f"pattern [{self.pattern}]: [{letters}] names a field a second time")
        self.named.append(token.field or "")
        self.numeric_before, self.section_starts = token.numeric, False
        return f"(?P<{token.group}>{token.expression})" if token.group else f"(?:{token.expression})"


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regular expression that matches what ``pattern`` parses, with a group per field (``year``,
    ``era_year`` or ``short_year``, ``month`` or ``month_name``, ``day`` ... ``fraction``, ``zone``);
    PatternError when it is not read."""
    expression, combinations = _Reader(pattern).section(nested=False)
    for fields in sorted(combinations, key=lambda named: (len(named), sorted(named))):
        named = [name for name in _ORDER if name in fields]
        if named != list(_ORDER[: len(named)]) or not named:
            raise PatternError(
                f"pattern [{pattern}]: its fields must be the leading ones of {', '.join(_ORDER)} (it names "
                f"{', '.join(named) or 'none of them'})"
            )
    return re.compile(expression)


def pattern_year(groups: dict[str, str | None]) -> int:
    """The year a match of ``compile_pattern`` names (0 when it names none): ``uuuu`` as written, ``yyyy`` a year
    of the era (from 1; ValueError for 0), ``yy`` one of 2000 to 2099."""
    if groups.get("short_year") is not None:
        return 2000 + int(groups["short_year"] or 0)
    if groups.get("era_year") is not None:
        year = int(groups["era_year"] or 0)
        if year < 1:
            raise ValueError(f"no year of era {year}")
        return year
    return int(groups.get("year") or 0)


def pattern_month(groups: dict[str, str | None]) -> int:
    """The month a match of ``compile_pattern`` or an ISO 8601 date names, by number or name; 1 when none."""
    if (name := groups.get("month_name")) is not None:
        return MONTHS.index(name) + 1
    return int(groups.get("month") or 1)
