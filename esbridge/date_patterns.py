"""Custom Java date patterns in a date ``format`` (``dd/MM/yyyy``, ``yyyy-MM-dd HH:mm:ss``), read as OpenSearch
reads them: ``java.time``'s pattern letters, parsed strictly and case-sensitively. The embedded engine reads a date
field's values and a range's bounds with them (``embedded.dates``), and recency an attached index's stored dates
(``esbridge.query.engine_dates``), so both read a value alike.

The letters read: ``y`` (year of era: 1 or more, no sign), ``u`` (year: a sign allowed), ``M``, ``d``, ``H``,
``m``, ``s`` (one letter: one or more digits; two: exactly two), ``S`` (a fraction of exactly as many digits as
letters), ``X`` (``Z`` or an offset: ``+HH`` or ``+HHmm``, ``+HHmm``, ``+HH:mm`` for one, two, three letters) and
``Z`` (``+HHmm``, one to three letters). ``yy`` and ``uu`` are two digits, years 2000 to 2099; ``yyyy`` and more
letters take exactly that many digits, or more after a ``+``; ``uuuu`` takes a ``-`` too. Text in single quotes
(``''`` for a quote) and any character other than a letter is matched as written.

The fields given must be the leading ones of year, month, day, hour, minute, second, fraction (a pattern of a year
and a day only names no date the engine reads). Any other letter, an optional section (``[...]``), a field named
twice, or a number of varying width right after another number (``yyyyM``: ``java.time`` splits such digits in a
way the engine does not reproduce) is refused, naming the pattern and what it cannot read. A varying number before
fixed ones (``yyyyMMdd``) leaves them their digits, as ``java.time`` does.
"""

from __future__ import annotations

import functools
import re

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
READ_LETTERS = "y, u, M, d, H, m, s, S, X and Z"


class PatternError(ValueError):
    """A pattern esbridge does not read."""


def _year(letter: str, count: int) -> tuple[str, str, bool]:
    """(group name, regular expression, varying width) of ``count`` letters ``y`` or ``u``."""
    if count == 2:
        return "short_year", "[0-9]{2}", False
    name, sign = ("era_year", "") if letter == "y" else ("year", "-?")
    if count < 4:
        return name, f"{sign}[0-9]{{{count},9}}", True
    negative = "" if letter == "y" else rf"|-[0-9]{{{count},9}}"
    return name, rf"\+[0-9]{{{count + 1},9}}{negative}|[0-9]{{{count}}}", True


def _field(letter: str, count: int, pattern: str) -> tuple[str, str, bool]:
    """(group name, regular expression, varying width) of a run of ``count`` pattern letters."""
    if letter in "yu" and count <= 9:
        return _year(letter, count)
    if letter in _FIELDS and count <= 2:
        return _FIELDS[letter], "[0-9]{1,19}" if count == 1 else "[0-9]{2}", count == 1
    if letter == "S" and count <= 9:
        return "fraction", f"[0-9]{{{count}}}", False
    if (letter, count) in _OFFSETS:
        return "zone", _OFFSETS[letter, count], False
    raise PatternError(f"pattern [{pattern}]: the letters [{letter * count}] are not read")


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


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regular expression that matches what ``pattern`` parses, with a group per field (``year``,
    ``era_year`` or ``short_year``, ``month`` ... ``fraction``, ``zone``); PatternError when it is not read."""
    parts: list[str] = []
    fields: list[str] = []
    numeric_before = False
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char.isascii() and char.isalpha():
            count = len(pattern) - at - len(pattern[at:].lstrip(char))
            name, expression, varying = _field(char, count, pattern)
            numeric = name != "zone"
            if numeric and numeric_before and varying:
                raise PatternError(f"pattern [{pattern}]: [{char * count}] varies in width right after a number")
            if name in fields or (name.endswith("year") and "year" in fields):
                raise PatternError(f"pattern [{pattern}]: [{char * count}] names a field a second time")
            fields.append("year" if name.endswith("year") else name)
            parts.append(f"(?P<{name}>{expression})")
            numeric_before = numeric
            at += count
            continue
        if char == "'":
            text, at = _quoted(pattern, at)
            parts.append(re.escape(text))
        elif char in "[]{}#":
            raise PatternError(f"pattern [{pattern}]: [{char}] is not read")
        else:
            parts.append(re.escape(char))
            at += 1
        numeric_before = False
    named = [name for name in _ORDER if name in fields]
    if named != list(_ORDER[: len(named)]) or not named:
        raise PatternError(
            f"pattern [{pattern}]: its fields must be the leading ones of {', '.join(_ORDER)} (it names "
            f"{', '.join(named) or 'none of them'})"
        )
    return re.compile("".join(parts))


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
