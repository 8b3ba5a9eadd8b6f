"""Date values as OpenSearch reads them with a date field's default format,
``strict_date_optional_time||epoch_millis``: as a stored value, and as a range or term bound.

A bound stands for a span: ``2024-05-01`` for that whole day, ``2024-05-01T08:00:00`` for that whole
second; a date without its day (``2024-05``, ``2024``) for its first day, as OpenSearch fills in only the
time. ``gte`` and ``lt`` compare with the span's first millisecond, ``gt`` and ``lte`` with its last, and a
``term`` matches the whole span. Documents are compared by their millisecond (OpenSearch keeps no finer
precision), so a bound with microseconds counts by its millisecond too.
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import datetime, timezone
from typing import Any

_STRICT = re.compile(
    r"(?P<year>\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2})"
    r"(?:T(?P<hour>\d{2})(?::(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?)?"
    r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)
_EPOCH = re.compile(r"-?\d+")
_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def parse_date(value: Any) -> float:
    """Epoch milliseconds of a stored date: ISO-8601 (UTC when no offset), or epoch millis as a number or
    a string of digits. A reduced date (``2024``, ``2024-05``) is its first moment."""
    if isinstance(value, bool):
        raise ValueError(f"not a date: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if _EPOCH.fullmatch(text) and len(text) != 4:  # four digits are a year, as OpenSearch tries dates first
        return float(int(text))
    try:
        return _from_isoformat(text)
    except ValueError:
        return float(date_span(text)[0])


def _from_isoformat(text: str) -> float:
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp() * 1000.0


def date_span(value: Any) -> tuple[int, int]:
    """The first and last epoch millisecond ``value`` stands for as a query bound; ValueError when it is no date."""
    if isinstance(value, bool):
        raise ValueError(f"not a date: {value!r}")
    if isinstance(value, (int, float)):
        return _millis(value), _millis(value)
    text = str(value).strip()
    if "now" in text or "||" in text:
        raise ValueError(f"date math {text!r}")
    found = _STRICT.fullmatch(text)
    if found is None:
        if _EPOCH.fullmatch(text):
            return _millis(int(text)), _millis(int(text))
        moment = math.floor(_from_isoformat(text))  # another ISO-8601 form: as precise as it is written
        return moment, moment
    parts = found.groupdict()
    year, month, day, hour, minute, second = (
        int(parts[name] or default)
        for name, default in (("year", 0), ("month", 1), ("day", 1), ("hour", 0), ("minute", 0), ("second", 0))
    )
    start = datetime(year, month, day, hour, minute, second)  # validates the fields (month 13, hour 25, ...)
    fraction = parts["fraction"] or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if fraction:
        length = 10 ** (9 - len(fraction))
    else:
        unit = next((name for name in ("second", "minute", "hour") if parts[name]), "day")
        length = _SECONDS[unit] * _NS_PER_S
    first = (calendar.timegm(start.timetuple()) - _offset(parts["zone"])) * _NS_PER_S + nanos
    return first // _NS_PER_MS, (first + length - 1) // _NS_PER_MS


def _millis(value: float) -> int:
    """Epoch milliseconds as a date field holds them (a long); ValueError beyond."""
    if not math.isfinite(value) or not -(2**63) <= value < 2**63:
        raise ValueError(f"epoch milliseconds out of range: {value!r}")
    return math.floor(value)


def _offset(zone: str | None) -> int:
    """Seconds east of UTC of an offset written ``Z``, ``+02``, ``+0200`` or ``+02:00``."""
    if not zone or zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
    return -seconds if zone[0] == "-" else seconds
