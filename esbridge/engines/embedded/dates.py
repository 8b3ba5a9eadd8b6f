"""Date values as OpenSearch reads them with a date field's format (by default
``strict_date_optional_time||epoch_millis``): as a stored value, and as a range or term bound.

The formats read are ``strict_date_optional_time``, ``date_optional_time`` (one-digit months, days and times,
years of one to five digits), ``epoch_millis``, ``epoch_second`` and custom Java patterns of common letters
(``uuuu-MM-dd``, ``dd/MM/yyyy``: see ``esbridge.date_patterns``), alone or joined by ``||``: the parts
are tried in order on the value's text (a JSON number's too: ``2024`` is a year to
``strict_date_optional_time``), the first that reads it decides. A year may be negative (``-0100-06-01``): years
count proleptic Gregorian, with a year 0, as OpenSearch counts them.

A bound stands for a span: ``2024-05-01`` for that whole day, ``2024-05-01T08:00:00`` for that whole second,
``2024-05-01T08:00:00.4`` for that instant only, an ``epoch_second`` for that second; a date without its day
(``2024-05``, ``2024``) for its first day, as OpenSearch fills in only the time. ``gte`` and ``lt`` compare with
the span's first millisecond, ``gt`` and ``lte`` with its last, and a ``term`` matches the whole span. Documents
are compared by their millisecond (OpenSearch keeps no finer precision), so a bound with microseconds counts by
its millisecond too. A range's ``time_zone`` (``time_zones``) reads a bound without an offset on that zone's
clock, each end of its span apart (a day in Paris when clocks go forward spans 23 hours).
"""

from __future__ import annotations

import math
import re
from datetime import tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any

from esbridge.date_patterns import READ_LETTERS, PatternError, compile_pattern, pattern_month, pattern_year
from esbridge.engines.embedded.time_zones import OutsideZoneYears, time_zone, utc_seconds

DEFAULT_FORMAT = "strict_date_optional_time||epoch_millis"

_YEAR = r"(?P<year>[0-9]{4}|-[0-9]{4,9})"
_ZONE = r"(?P<zone>Z|[+-][0-9]{2}(?::[0-9]{2}(?::[0-9]{2})?|[0-9]{2})?|[A-Za-z][A-Za-z0-9~/._:+-]+)?"
"""After a time: ``Z``, an offset (``+01``, ``+0100``, ``+01:00``, ``+01:00:30``; not ``+010030``, which only
Elasticsearch takes), or a zone by name (``Europe/Paris``, ``UTC``, ``GMT+01:00``), as the clusters read ISO 8601
dates."""


def _iso(year: str, digits: str) -> re.Pattern[str]:
    """A date of ``year``, then ``-MM``, ``-dd``, and after a whole date ``T`` with an hour, ``:mm``, ``:ss`` and a
    fraction, then a zone."""
    seconds = rf"(?::(?P<second>{digits})(?:[.,](?P<fraction>[0-9]{{1,9}}))?)?"
    time = rf"(?:(?P<hour>{digits})(?::(?P<minute>{digits}){seconds})?)?"
    return re.compile(rf"{year}(?:-(?P<month>{digits})(?:-(?P<day>{digits})(?:T{time}{_ZONE})?)?)?")


_STRICT = _iso(_YEAR, r"[0-9]{2}")
_LENIENT = _iso(r"(?P<year>-?[0-9]{1,5})", r"[0-9]{1,2}")
_DATES = {
    "strict_date_optional_time": _STRICT,
    "date_optional_time": _LENIENT,
}
FORMATS = (*_DATES, "epoch_millis", "epoch_second")
"""The named format parts the embedded engine reads; beside them it reads custom patterns (``date_patterns``), and a
date field or range with another part is refused."""
_EPOCH = re.compile(r"-?[0-9]+(?:\.[0-9]*)?")
_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_LONG = 2**63


def format_parts(form: Any) -> tuple[str, ...]:
    """The parts of a date ``format``; ValueError naming the first the embedded engine does not read."""
    if not isinstance(form, str):
        raise ValueError(f"format [{form!r}] is not a string")
    parts = tuple(form.split("||"))
    for part in parts:
        if part not in FORMATS:
            try:
                compile_pattern(part)
            except PatternError as exc:
                raise ValueError(
                    f"format [{form}] is not supported by the embedded engine: {exc} (it reads {', '.join(FORMATS)} "
                    f"and patterns of the letters {READ_LETTERS}, alone or joined by ||)"
                ) from None
    return parts


def _parser(part: str) -> re.Pattern[str]:
    return _DATES.get(part) or compile_pattern(part)


def field_format(form: Any) -> str:
    """A date field's format as it is read: the default for one this engine does not read, which only an index
    created before such formats were refused holds (its values were read so)."""
    try:
        format_parts(form)
    except ValueError:
        return DEFAULT_FORMAT
    return str(form)


def parse_date(value: Any, form: str = DEFAULT_FORMAT) -> float:
    """Epoch milliseconds of a stored date as a field of ``form`` reads it (UTC when no offset); ValueError when
    no part of ``form`` reads it. A reduced date (``2024``, ``2024-05``) is its first moment; a date keeps its
    precision below the millisecond."""
    text = _text(value)
    for part in format_parts(form):
        if part.startswith("epoch_"):
            if _EPOCH.fullmatch(text):
                return _epoch(text, part)
            continue
        found = _parser(part).fullmatch(text)
        if found is not None and (span := _read(found)) is not None:
            return span[0] / _NS_PER_MS
    raise ValueError(f"failed to parse date field [{text}] with format [{form}]")


def date_span(value: Any, form: str | None = None, zone: tzinfo | None = None) -> tuple[int, int]:
    """The first and last epoch millisecond ``value`` stands for as a query bound; ValueError when it is no date.
    ``form`` None: the default format. ``zone``: a range's ``time_zone``, for a date written without an offset,
    and for an epoch value too: OpenSearch 3.6 reads the epoch's UTC clock time on the zone's clock (Elasticsearch
    leaves the epoch as it is)."""
    if isinstance(value, bool):
        raise ValueError(f"not a date: {value!r}")
    text = _text(value)
    if "now" in text or "||" in text:
        raise ValueError(f"date math {text!r}")
    for part in format_parts(form or DEFAULT_FORMAT):
        if part.startswith("epoch_"):
            if _EPOCH.fullmatch(text):
                first = _millis(_epoch(text, part))
                whole = part == "epoch_second" and "." not in text
                last = first + 999 if whole else first
                if zone is not None:
                    return _on_clock(first, zone), _on_clock(last, zone)
                return first, last
            continue
        found = _parser(part).fullmatch(text)
        if found is not None and (span := _read(found, zone)) is not None:
            return span[0] // _NS_PER_MS, span[1] // _NS_PER_MS
    raise ValueError(f"failed to parse date field [{text}] with format [{form or DEFAULT_FORMAT}]")


def _on_clock(millis: int, zone: tzinfo) -> int:
    """The moment at which ``zone``'s clock reads what UTC's reads at ``millis``."""
    seconds, rest = divmod(millis, 1000)
    return utc_seconds(seconds, zone) * 1000 + rest


def _text(value: Any) -> str:
    """The text a cluster parses: a string as it is, a JSON number as written."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"not a date: {value!r}")
    return value if isinstance(value, str) else repr(value)


def _epoch(text: str, part: str) -> float:
    try:
        number = Decimal(text) * (1000 if part == "epoch_second" else 1)
    except InvalidOperation:
        raise ValueError(f"not a number: {text!r}") from None
    if not -_LONG < number < _LONG:
        raise ValueError(f"epoch milliseconds out of range: {text!r}")
    return float(number)


def _read(found: re.Match[str], zone: tzinfo | None = None) -> tuple[int, int] | None:
    """``_span``, or None when the text matched names no date (a month 13, an unknown zone): the clusters then try
    the format's next part, and name the value and format when none reads it. A date the engine cannot read in a
    time zone is refused as such."""
    try:
        return _span(found, zone)
    except OutsideZoneYears:
        raise
    except ValueError:
        return None


def _span(found: re.Match[str], zone: tzinfo | None = None) -> tuple[int, int]:
    """The first and last nanosecond since the epoch a date names (ValueError for a month 13, an hour 25, ...),
    read in ``zone`` when it has no zone of its own. A date with a fraction names that instant only, as a cluster
    rounds no bound given to a fraction of a second."""
    parts = found.groupdict()
    year, month, day = pattern_year(parts), pattern_month(parts), int(parts.get("day") or 1)
    hour, minute, second = (int(parts.get(name) or 0) for name in ("hour", "minute", "second"))
    if not (1 <= month <= 12 and 1 <= day <= _days_in(year, month) and hour < 24 and minute < 60 and second < 60):
        raise ValueError(f"no such date: {found[0]!r}")
    fraction = parts.get("fraction")
    if fraction is not None:
        length = 1
    else:
        unit = next((name for name in ("second", "minute", "hour") if parts.get(name)), "day")
        length = _SECONDS[unit] * _NS_PER_S
    local = ((_days(year, month, day) * 24 + hour) * 60 + minute) * 60 + second
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    own = parts.get("zone")
    if own is not None and own != "Z" and own[0] not in "+-":  # a zone by name, the date's own
        zone, own = time_zone(own), None
    if own is not None or zone is None:
        first = (local - _offset(own)) * _NS_PER_S + nanos
        return first, first + length - 1
    last = local * _NS_PER_S + nanos + length - 1
    last_seconds, last_nanos = divmod(last, _NS_PER_S)
    return (
        utc_seconds(local, zone) * _NS_PER_S + nanos,
        utc_seconds(last_seconds, zone) * _NS_PER_S + last_nanos,
    )


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if _leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date, any year (H. Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _millis(value: float) -> int:
    """Epoch milliseconds as a date field holds them (a long); ValueError beyond."""
    if not math.isfinite(value) or not -(2**63) <= value < 2**63:
        raise ValueError(f"epoch milliseconds out of range: {value!r}")
    return math.floor(value)


def _offset(zone: str | None) -> int:
    """Seconds east of UTC of an offset written ``Z``, ``+02``, ``+0200``, ``+02:00`` or ``+02:00:30``."""
    if not zone or zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    hours, minutes, rest = int(digits[:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    seconds = hours * 3600 + minutes * 60 + rest
    if minutes > 59 or rest > 59 or seconds > 18 * 3600:
        raise ValueError(f"no such offset: {zone!r}")
    return -seconds if zone[0] == "-" else seconds
