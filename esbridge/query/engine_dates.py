"""Reading a date field's value as OpenSearch and Elasticsearch read it, so that recency takes exactly the values
the engines take.

esbridge maps ``modified_at`` as a ``date`` without a ``format``, so both engines read it with their default,
``strict_date_optional_time||epoch_millis``: a date first, epoch milliseconds when it is not one.

- The date: a year of four digits (a ``-`` before it for years before year 0), then optionally ``-MM``, ``-dd``,
  and after a whole date ``T`` with ``HH``, ``:mm``, ``:ss`` and a fraction of up to nine digits after ``.`` or
  ``,``; after the hour a zone: ``Z``, an offset (``+02``, ``+0200``, ``+02:00``, ``+02:00:00``, at most 18
  hours; ``UTC+01:00``, ``GMT+01:00``, ``UT+01:00``) or a region (``Europe/Paris``, ``UTC``). Nothing else: no
  week dates (``2024-W05-3``), ordinal dates (``2024-035``), basic format (``20240501T100000``), space for ``T``,
  lower-case ``z`` or surrounding spaces.
- Epoch milliseconds: digits, ``-`` allowed (a Java long, but its lowest value), with an optional fraction
  (``1700000000000.5``) that the engines drop (rounding down). A JSON number is read as its text, so ``2024``
  is a year and ``1e+16`` is refused.

Python's datetime holds the years 1 to 9999 only: a date the engines take outside them (``0000``, ``-1000``,
epoch milliseconds past 9999) is given as ``datetime.min`` or ``datetime.max``, which recency treats alike (as
old as can be, or as age 0). Where the engines differ from each other (OpenSearch takes ``2024-05T10``,
Elasticsearch ``+013000`` and ``UTC+1``), only what both take is read.

An attached index's date field may have another ``format`` (``FieldMap.date_format``); its parts are tried in
order, as the engines try them: ``strict_date_optional_time`` (and ``_nanos``) as above; ``date_optional_time``
also with one-digit months, days, hours, minutes and seconds and years of one to five digits (``2024-5-1T9:5``;
Elasticsearch takes up to nine, OpenSearch five);
``epoch_millis``; ``epoch_second`` (``1700000000``, fraction allowed); a custom Java pattern (``dd/MM/yyyy HH:mm``,
``yyyy/MM/dd``, ``EEE, dd MMM yyyy HH:mm:ss Z``, ``yyyy-MM-dd['T'HH:mm]``) of the letters
``esbridge.date_patterns`` reads, with the embedded engine's parser, in UTC unless it has an offset. A value no part
reads (or whose parts esbridge does not know, such as ``EEEE, dd MMMM yyyy``, whose full names the engines read
apart) is None.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import ROUND_FLOOR, Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from esbridge.date_patterns import PatternError, compile_pattern, pattern_month, pattern_year

_DATE = re.compile(
    r"(?P<year>-?[0-9]{4})(?:-(?P<month>[0-9]{2})(?:-(?P<day>[0-9]{2})(?:T(?:(?P<hour>[0-9]{2})"
    r"(?::(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]{1,9}))?)?)?"
    r"(?P<zone>Z|[+-][0-9]{2}(?::[0-9]{2}(?::[0-9]{2})?|[0-9]{2})?|[A-Za-z][A-Za-z0-9/_:+-]*)?)?)?)?)?"
)
_LENIENT_DATE = re.compile(
    r"(?P<year>-?[0-9]{1,5})(?:-(?P<month>[0-9]{1,2})(?:-(?P<day>[0-9]{1,2})(?:T(?:(?P<hour>[0-9]{1,2})"
    r"(?::(?P<minute>[0-9]{1,2})(?::(?P<second>[0-9]{1,2})(?:[.,](?P<fraction>[0-9]{1,9}))?)?)?"
    r"(?P<zone>Z|[+-][0-9]{2}(?::[0-9]{2}(?::[0-9]{2})?|[0-9]{2})?|[A-Za-z][A-Za-z0-9/_:+-]*)?)?)?)?)?"
)
_EPOCH_MILLIS = re.compile(r"-?[0-9]+(?:\.[0-9]*)?")
_OFFSET = re.compile(r"(?P<sign>[+-])(?P<hours>[0-9]{2}):?(?P<minutes>[0-9]{2})?:?(?P<seconds>[0-9]{2})?")
# UTC+01:00, GMT+01:00 and UT+01:00; both engines take these, only Elasticsearch UTC+1.
_PREFIXED_OFFSET = re.compile(r"(?:UTC|GMT|UT)([+-][0-9]{2}:[0-9]{2})")
_LONGEST_OFFSET = timedelta(hours=18)
# Names in the time-zone database that the engines (Java's ZoneId) refuse.
_REFUSED_ZONES = frozenset({"EST", "MST", "HST"})
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_LONG = 2**63


DEFAULT_FORMAT = "strict_date_optional_time||epoch_millis"
"""The engines' date format for a ``date`` field mapped without one, as esbridge maps ``modified_at``."""


def parse_engine_date(value: object, formats: str | None = None) -> datetime | None:
    """``value`` as a date field of ``formats`` (the default date format when None) reads it (see the module
    docstring); None when the engines refuse it or no part of ``formats`` is one esbridge reads. A datetime is
    taken as it is."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        value = repr(value)  # the JSON text the engine read
    if not isinstance(value, str):
        return None
    for part in (formats or DEFAULT_FORMAT).split("||"):
        reader = _READERS.get(part.strip())
        if reader is not None:
            moment = reader(value)
        elif (pattern := _pattern(part)) is not None:
            moment = _from_pattern(found) if (found := pattern.fullmatch(value)) is not None else None
        else:
            continue
        if moment is not None:
            return moment
    return None


def unread_parts(formats: str | None) -> list[str]:
    """The parts of a date field's ``formats`` that esbridge cannot read, so recency leaves their values out."""
    return [
        part for part in (formats or "").split("||") if part and part.strip() not in _READERS and not _pattern(part)
    ]


def _pattern(part: str) -> re.Pattern[str] | None:
    try:
        return compile_pattern(part)
    except PatternError:
        return None


def _strict(text: str) -> datetime | None:
    return _from_date(date) if (date := _DATE.fullmatch(text)) is not None else None


def _lenient(text: str) -> datetime | None:
    return _from_date(date) if (date := _LENIENT_DATE.fullmatch(text)) is not None else None


def _epoch_millis(text: str) -> datetime | None:
    return _from_epoch_millis(text) if _EPOCH_MILLIS.fullmatch(text) else None


def _epoch_second(text: str) -> datetime | None:
    if not _EPOCH_MILLIS.fullmatch(text):
        return None
    return _from_epoch_millis(str(Decimal(text) * 1000))


def _from_pattern(found: re.Match[str]) -> datetime | None:
    try:
        year = pattern_year(found.groupdict())
    except ValueError:
        return None
    return _from_date(found, year)


def _from_date(found: re.Match[str], year: int | None = None) -> datetime | None:
    """The moment a match names; ``year`` when the match's groups name it otherwise than ``year``."""
    fields = found.groupdict()
    year = int(found["year"]) if year is None else year
    month, day = pattern_month(fields), int(fields.get("day") or 1)
    if not 1 <= month <= 12 or not 1 <= day <= _days_in(year, month):
        return None
    hour, minute, second = (int(fields.get(name) or 0) for name in ("hour", "minute", "second"))
    if hour > 23 or minute > 59 or second > 59:
        return None
    own = fields.get("zone")
    zone = _zone(own) if own else None
    if own and zone is None:
        return None
    if not 1 <= year <= 9999:
        return datetime.max if year > 0 else datetime.min
    microsecond = int((fields.get("fraction") or "")[:6].ljust(6, "0"))
    return datetime(year, month, day, hour, minute, second, microsecond, tzinfo=zone)


def _days_in(year: int, month: int) -> int:
    # monthrange of a year of the same kind: it needs a datetime.date, whose years are 1 to 9999, while isleap
    # takes any year, counted proleptic Gregorian as the engines do before year 1 (0 is a leap year, -100 is not).
    return calendar.monthrange(2000 if calendar.isleap(year) else 2001, month)[1]


def _zone(text: str) -> tzinfo | None:
    if text == "Z":
        return timezone.utc
    if (offset := _OFFSET.fullmatch(text)) is not None:
        minutes, seconds = int(offset["minutes"] or 0), int(offset["seconds"] or 0)
        if minutes > 59 or seconds > 59:
            return None
        shift = timedelta(hours=int(offset["hours"]), minutes=minutes, seconds=seconds)
        if shift > _LONGEST_OFFSET:
            return None
        return timezone(-shift if offset["sign"] == "-" else shift)
    if text == "UT":
        return timezone.utc
    if (prefixed := _PREFIXED_OFFSET.fullmatch(text)) is not None:
        return _zone(prefixed[1])
    if text in _REFUSED_ZONES or text[0] in "+-":
        return None
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        return None


_READERS = {
    "strict_date_optional_time": _strict,
    "strict_date_optional_time_nanos": _strict,
    "date_optional_time": _lenient,
    "epoch_millis": _epoch_millis,
    "epoch_second": _epoch_second,
}


def _from_epoch_millis(text: str) -> datetime | None:
    millis = int(Decimal(text).to_integral_value(rounding=ROUND_FLOOR))
    if not -_LONG < millis < _LONG:  # a Java long, less its lowest value
        return None
    try:
        return _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        return datetime.max.replace(tzinfo=timezone.utc) if millis > 0 else datetime.min.replace(tzinfo=timezone.utc)
