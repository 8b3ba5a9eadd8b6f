"""Dates written as numbers: a year or a year and month, and epoch seconds or milliseconds, for every source.

OpenSearch and Elasticsearch read ``"2024"`` and ``"2024-05"`` in a date field as the first day of that year or
month, and so does recency. Taken as epoch seconds, as the sources take other numbers, ``created: 2024`` would be
33 minutes into 1970.

An epoch number above ``EPOCH_MILLISECONDS_ABOVE`` (2e10) is read as milliseconds, one up to it as seconds: as
seconds 2e10 is in the year 2603, as milliseconds in August 1970, so either reading beyond it would be a date
nobody writes. (It is pydantic's rule, which JSONL dates always followed; Markdown frontmatter drew the line at
10^11 until both sources took it from here.)

An integer of eight digits that is also a date written YYYYMMDD (``20240501``) is still read as epoch seconds
(1970-08-23), but with a warning naming both readings (``yyyymmdd_warning``).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

_YEAR_OR_MONTH = re.compile(r"([0-9]{4})(?:-([0-9]{2}))?")
# An integer date of four digits is a year; below 1000 it is left to the epoch reading (``created: 0``).
_FIRST_YEAR_AS_NUMBER = 1000
EPOCH_MILLISECONDS_ABOVE = 2 * 10**10
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NUMBER_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")


def year_or_month(value: Any) -> datetime | None:
    """``2024``, ``"2024"`` or ``"2024-05"`` as the first moment of that year or month in UTC.

    None for anything else, a month or year that does not exist (``"2024-13"``, ``"0000"``) included.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not _FIRST_YEAR_AS_NUMBER <= value <= 9999:
            return None
        value = str(value)
    if not isinstance(value, str):
        return None
    match = _YEAR_OR_MONTH.fullmatch(value.strip())
    if match is None:
        return None
    year, month = int(match.group(1)), int(match.group(2) or 1)
    if year < 1 or not 1 <= month <= 12:
        return None
    return datetime(year, month, 1, tzinfo=timezone.utc)


def is_year_or_month(value: Any) -> bool:
    """Whether ``value`` is written as a year or a year and month, possible or not (``"0000"``, ``"2024-13"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _FIRST_YEAR_AS_NUMBER <= value <= 9999
    return isinstance(value, str) and _YEAR_OR_MONTH.fullmatch(value.strip()) is not None


def epoch_number(value: Any) -> int | float | None:
    """``value`` when it is a number (not a boolean), or the number a text of digits spells; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
        text = value.strip()
        return float(text) if "." in text else int(text)
    return None


def from_epoch(number: float) -> datetime | None:
    """Epoch seconds, or milliseconds above ``EPOCH_MILLISECONDS_ABOVE``, as a UTC datetime; None for a number
    that is no date (not finite, or outside the years 1 to 9999)."""
    if not math.isfinite(number):
        return None
    try:
        if abs(number) > EPOCH_MILLISECONDS_ABOVE:
            return _EPOCH + timedelta(milliseconds=number)
        return _EPOCH + timedelta(seconds=number)
    except OverflowError:
        return None


def yyyymmdd_warning(field: str, value: Any, moment: datetime | None) -> str | None:
    """Why ``value``, read as the epoch date ``moment``, may mean something else: it is also a YYYYMMDD date."""
    number = epoch_number(value)
    if moment is None or not isinstance(number, int) or not 10_000_101 <= number <= 99_991_231:
        return None
    try:
        day = date(number // 10_000, number // 100 % 100, number % 100)
    except ValueError:
        return None
    return (
        f"{field} {value!r} is read as epoch seconds, {moment.isoformat()}; as YYYYMMDD it would be "
        f"{day.isoformat()}: write {day.isoformat()} if that is what it means"
    )


def as_utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    try:
        return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    except OverflowError as exc:  # (9999-12-31T23:59:59-05:00 is past the last datetime once in UTC)
        raise ValueError(f"{moment.isoformat()} lies outside the dates that can be held once moved to UTC") from exc


def numeric_date(value: Any) -> Any:
    """A date written as a number, a year or a year and month as its datetime (``esbridge.ingest.calendar``);
    ``ValueError`` when it names no date (``"0000"``, ``"2024-13"``, 1e20); any other value as it is."""
    if is_year_or_month(value):
        moment = year_or_month(value)
        if moment is None:
            raise ValueError(f"{value!r} is written as a year or a year and month, but there is no such date")
        return moment
    number = epoch_number(value)
    if number is None:
        return value
    moment = from_epoch(number)
    if moment is None:
        raise ValueError(f"{value!r} as epoch seconds (milliseconds above 2e10) is outside the years 1 to 9999")
    return moment
